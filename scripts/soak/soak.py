#!/usr/bin/env python3
"""Canopy's soak (issue 20 part 4): a long run of mixed traffic against `canopy serve`.

Starts its own embedded cluster in --data-dir (wiped and made again: the
directory holds a marker file so that nothing else is ever removed) and a
gateway on 127.0.0.1:--port, adds --users users, and has each of them, in
its own thread, do a weighted random mix for --minutes:

  query       records with a filter and a sort, following the cursor
  lookup      lookup by names (some unknown: UNKNOWN_ITEM is expected there), POST or GET
  modify      modifyRecords batches: creates, updates with recordChangeTag, deletes
  stale       an update with an old recordChangeTag: SERVER_RECORD_CHANGED expected
  feeds       zoneChanges / databaseChanges paged from the last token (now and then from null)
  sharing     a zone-wide share with another simulated user, step by step:
              saveShare, acceptShare and a read as the participant, setParticipant
              READ_ONLY and a refused write, removeParticipant and a refused read,
              deleteShare
  subscribe   a WebSocket (graphql-transport-ws): connection_init with the token,
              zoneChanged or databaseChanged, commits over HTTP and their `next`,
              then complete and close (or close without complete)
  bad         malformed JSON, invalid GraphQL, a bad token (HTTP and WebSocket),
              an unknown zone, another user's zone, a bad filter, a forged change
              token, a mutation by GET, a body over the size limit: each with the
              answer it must get
  misc        me, zones

An unexpected error is an HTTP 5xx, a connection error or time-out, an
HTTP status or error code the request kind does not expect (or a missing
one that it must get), a broken WebSocket exchange, and INTERNAL_ERROR
always. Every 5 s it samples the gateway's RSS (/proc/PID/status), its
threads and open files, the PostgreSQL connections to the database
(pg_stat_activity, through the cluster's socket as its administrator) and
the latencies of that window.

It writes SOAK.md (configuration, totals per kind, errors, the memory
slope after warm-up, connections, p50/p99 per minute) and soak.png (RSS,
connections, p50/p99 over time) to --output-dir, prints a summary line,
and exits 0 only when: no unexpected error; RSS after warm-up grows less
than --max-rss-slope MB/hour (judged over at least --min-slope-minutes
after warm-up) and its last minute is within --max-rss-drift
of its first minute after warm-up; PostgreSQL connections after warm-up
stay at most --max-connections and the second half's most exceeds the
first half's by at most --max-connection-spread; the last third's p99 is at most
--max-p99-ratio times the middle third's.

usage: make soak   (release build; 30 minutes, 20 users)
       python3 scripts/soak/soak.py [--minutes M] [--users N] [--warmup-minutes W]
              [--port P] [--data-dir D] [--output-dir O] [--think-ms T] [--seed S]
The binary is .build/release/canopy unless CANOPY_SOAK_BINARY names another.
Needs Python's websockets (Server/Tests/python/requirements.txt) and matplotlib.

soak.py is the entry point; the rest is in processes.py (the cluster, the
gateway, the data directory), client.py (HTTP and how answers are judged),
users.py (the simulated users), stats.py, sampler.py, analysis.py (the
checks) and report.py (SOAK.md, soak.png).
"""
import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path

import client
from analysis import analyse
from client import HTTP_TIMEOUT
from processes import BINARY, ROOT, Cluster, Gateway, prepare_data_dir, run, say
from report import plot, write_report
from sampler import SAMPLE_SECONDS, Sampler
from stats import Stats
from users import WS_TIMEOUT, ZONES, User, ws_connect


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--warmup-minutes", type=float, default=5.0)
    parser.add_argument("--port", type=int, default=18280)
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".soak")
    parser.add_argument("--output-dir", type=Path, default=ROOT / "docs" / "soak")
    parser.add_argument("--think-ms", type=float, default=100.0, help="mean pause between a user's actions")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--max-rss-slope", type=float, default=20.0, help="MB/hour after warm-up")
    parser.add_argument("--max-rss-drift", type=float, default=0.15, help="last vs first minute after warm-up")
    parser.add_argument("--min-slope-minutes", type=float, default=10.0,
                        help="judge the RSS slope only over at least this many minutes after warm-up")
    parser.add_argument("--max-connections", type=int, default=25,
                        help="PostgreSQL connections after warm-up (the gateway's pool holds 20, plus its listener)")
    parser.add_argument("--max-connection-spread", type=int, default=2,
                        help="how far the second half's most connections may exceed the first half's")
    parser.add_argument("--max-p99-ratio", type=float, default=2.0)
    parser.add_argument("--strict", action="store_true", help="count KNOWN_DEVIATIONS as unexpected errors")
    args = parser.parse_args()
    if ws_connect is None:
        sys.exit("soak.py needs websockets >= 11 (python3 -m pip install -r Server/Tests/python/requirements.txt)")
    client.STRICT = args.strict
    if args.users < 2:
        sys.exit("--users must be at least 2 (shares need a participant)")
    if args.warmup_minutes >= args.minutes:
        sys.exit("--warmup-minutes must be less than --minutes")
    if not BINARY.exists():
        sys.exit(f"{BINARY} does not exist: build it (swift build --package-path Server --scratch-path .build -c release --product canopy) or set CANOPY_SOAK_BINARY")
    try:
        import matplotlib  # noqa: F401  (checked now, not after 30 minutes)
    except ImportError:
        sys.exit("soak.py needs matplotlib for its plot: python3 -m pip install matplotlib")
    args.data_dir = args.data_dir.resolve()
    args.output_dir = args.output_dir.resolve()
    random.seed(args.seed)

    prepare_data_dir(args.data_dir)
    say(f"cluster in {args.data_dir}")
    cluster = Cluster(args.data_dir)
    gateway = Gateway(args.data_dir, args.port)
    stats = Stats()
    stop = threading.Event()
    interrupted = False
    try:
        gateway.start()
        say(f"canopy serve (pid {gateway.process.pid}) on 127.0.0.1:{args.port}; adding {args.users} users")
        accounts = [json.loads(run([BINARY, "users", "add", f"soak-{i:02d}", "--email", f"soak-{i:02d}@example.com",
                                    "--json", "--data-dir", args.data_dir]))
                    for i in range(args.users)]
        stats.t0 = time.monotonic()   # setup's requests count in the warm-up
        deadline = stats.t0 + args.minutes * 60.0
        users = [User(i, account, accounts, args, stats, stop, deadline) for i, account in enumerate(accounts)]
        sampler = Sampler(gateway, cluster, stats, stop)
        sampler.start()
        for user in users:
            user.setup()
        say(f"seeded {len(ZONES) + 1} zones a user; {args.minutes:g} minutes of traffic ({args.warmup_minutes:g} warm-up)")
        for user in users:
            user.start()
        while time.monotonic() < deadline and gateway.process.poll() is None:
            time.sleep(1.0)
        if gateway.process.poll() is not None:
            stats.fail("gateway", f"canopy serve exited with {gateway.process.returncode} during the soak")
        duration = min(stats.now(), args.minutes * 60.0)
        stop.set()
        for user in users:
            user.join(timeout=HTTP_TIMEOUT + 2 * WS_TIMEOUT)
            if user.is_alive():
                stats.fail("client", "a user did not stop", user.name)
        sampler.join(timeout=60)
        # The last sample, if the sampler stopped before it came.
        if not stats.samples or stats.samples[-1]["t"] < duration - SAMPLE_SECONDS:
            sampler.sample()
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
    finally:
        gateway.stop()
        cluster.stop()
    if interrupted:
        sys.exit("interrupted; the gateway and the cluster are stopped")

    if gateway.stopped_cleanly is False:
        stats.fail("gateway", "canopy serve did not stop within 30 s of SIGTERM")
    log_errors = gateway.log_errors()
    result = analyse(args, stats, duration)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    report, image = args.output_dir / "SOAK.md", args.output_dir / "soak.png"
    plot(image, args, stats, result)
    write_report(report, args, stats, result, gateway, log_errors, image.name)

    for name, ok, measured in result["checks"]:
        say(f"{'skip' if ok is None else 'pass' if ok else 'FAIL'}: {name}: {measured}")
    for t, kind, description, detail in stats.examples[:10]:
        say(f"at {t} s, {kind}: {description}: {detail[:200]}")
    total = sum(stats.totals.values())
    expected = sum(sum(c.values()) for c in stats.expected.values())
    deviations = sum(sum(c.values()) for c in stats.deviations.values())
    print(f"soak {'PASSED' if result['passed'] else 'FAILED'}: {total} requests in {duration / 60:.1f} min "
          f"({total / max(duration, 1):.0f}/s), {expected} expected errors, {result['unexpected']} unexpected, "
          f"{deviations} known deviations; "
          f"RSS {result.get('first_rss', float('nan')):.1f} -> {result.get('last_rss', float('nan')):.1f} MB "
          f"({result.get('slope', float('nan')):+.1f} MB/hour); PG connections {result.get('conn_min', '?')}-"
          f"{result.get('conn_max', '?')}; p99 {result['p99_middle']:.1f} -> {result['p99_last']:.1f} ms; "
          f"report {report}", flush=True)
    sys.exit(0 if result["passed"] else 1)


if __name__ == "__main__":
    main()
