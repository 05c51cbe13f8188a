#!/usr/bin/env python3
"""Canopy's benchmark: the gateway against the ceiling PostgreSQL sets.

For each workload, the release gateway is driven over loopback with wrk,
and the very statement the gateway sends for that request (captured from
PostgreSQL's log, parameters included) is run through pgbench with the same
number of clients. Each side runs `--runs` times; the table shows medians of
throughput, p50 and p99, and the ratio gateway / pgbench. Results go to
BENCHMARKS.md.

Workloads (issue 7): W1 lookup; W2 a sorted date-range page, first and
50 pages deep; W3 modifyRecords in batches of 400 new records; W4 draining
the change feed; W5 W2 as an accepted participant in SHARED scope; W6 W2
at several table sizes; and the gateway's peak memory and p99 under 64
connections; W2 with a streaming replica (issue 19); what push adds to a
write and a webhook's latency (issue 23); moving 1,000 records beside saving
them (issue 38, moves.py); issue 39's cold rows (W1 and W2 through a
gateway started right after loading, before any ANALYZE, beside the same
runs right after it), the tail at 8 clients in three sets with the floor's
p99, and W11, 64 writers each saving batches of 50 into their own zone
beside pgbench running the same transactions (speed.py). The record type's schema (Server/schema/bench.ckdb's text below) is
applied with `canopy schema apply`, so the declared fields are indexed.

Issue 18 adds the stack's floor: `canopy-floor` (Server/Benchmarks/Floor), a
minimal Hummingbird 2 + PostgresNIO program that answers by running the
statement the gateway sends for W1 (and for W2's first page) with the same
parameters and writing its JSON; it is driven by the same wrk script. The
gateway's and the floor's CPU time per request come from /proc/PID/stat.
It also compares the zone's owner with the guest, a participant of 1,000
shares (--guest-shares), running the same statements through pgbench: the
cost of row-level security as a user's memberships grow.

usage: bench.py [--records N] [--scales N,N,...] [--runs R] [--seconds S] [--clients C] [--guest-shares N] [--output FILE]
                [--citus-records N] [--binary PATH] [--floor-binary PATH]
                [--only floor|floor-modes|web-services|moves|speed|js-sync|refusals|writes|tracing|citus]
(make bench: quick; make bench-full: larger; make bench-citus: the Citus section alone). Needs wrk, pgbench and
Citus (scripts/ensure-citus.sh).

--binary PATH is the canopy binary benchmarked (it also runs the cluster,
the migrations and `schema apply`); the default is .build/release/canopy, or
CANOPY_BENCH_BINARY. --floor-binary PATH is the canopy-floor binary; the
default is .build/release/canopy-floor, or CANOPY_BENCH_FLOOR.

--only floor runs only the stack's floor and the gateway's CPU: the same
loading (without W6's other zones), then W1 and W2's first page through the
gateway, pgbench and the floor with CPU µs a request, and prints that table
instead of writing BENCHMARKS.md. To compare two builds of the gateway in
one session, run it once with each build's --binary.

--only floor-modes runs the floor alone in each of its serving modes (issue
69, step 1: floor_modes.py), W1 and W2's first page at 8 and 64 clients,
the modes alternating round by round, and prints that table.
--only speed runs issue 39's sections alone (speed.py) and prints them.
--only js-sync runs issue 40's sync of 100,000 records by CanopyJS in Node
and by CanopyKit (js_sync.py), each beside the same pages read raw by the
same stack, with the client's CPU a record, and prints its section.
--only refusals runs issue 48's refused introspection documents beside a
small request and the standard introspection answer (refusals.py), printed.
--only citus runs issue 67's W1-W4 through the gateway on a Citus cluster (a
coordinator and two workers) beside one PostgreSQL, each loaded alike with
--citus-records records through the gateway (citus.py), and writes that
section into --output, keeping the rest of the page.
--only writes runs W3 beside its pgbench transaction and what a batch of 400
saves pays for: cold by declared index, and on a warm connection trigger by
trigger (batch_triggers.py); printed.

bench.py is the entry point; the rest is in common.py (paths, commands, the
cluster), servers.py (gateway, floor), population.py and loading.py,
drivers.py (wrk, pgbench), workloads.py, measure.py, latency.py,
sections.py (each section's runs), speed.py (issue 39's), batch_triggers.py
(a batch's INSERT trigger by trigger, issue 51), citus.py (issue 67's
section), report.py
(BENCHMARKS.md); flamegraph.py and flamegraphs.sh draw flame graphs.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

import citus
import common
import js_sync
import loading
import plan_rates
import refusals
import report
import sections
import speed
import tracing
import workloads
from common import DATA, ROOT, run, say
from drivers import capture_statements
from measure import saved_batch_records
from servers import Gateway, graphql
from workloads import RECORDS_ARGS


def parse_options():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000, help="records in the benchmark's own zone (W1-W4)")
    parser.add_argument("--scales", default="20000,200000", help="W6's table sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="runs of each measure; the table shows their median")
    parser.add_argument("--seconds", type=int, default=10, help="length of each run")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of each run")
    parser.add_argument("--owners", type=int, default=1000, help="the background population's owners")
    parser.add_argument("--population", type=int, default=None,
                        help="records in the population's zones (default: half of --records)")
    parser.add_argument("--guest-shares", type=int, default=1000,
                        help="shares of the population the guest (W5, the membership comparison) accepted")
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"), help="the page the full run writes")
    parser.add_argument("--binary", metavar="PATH",
                        help="the canopy binary to benchmark (default: .build/release/canopy, or CANOPY_BENCH_BINARY)")
    parser.add_argument("--floor-binary", metavar="PATH",
                        help="the canopy-floor binary (default: .build/release/canopy-floor, or CANOPY_BENCH_FLOOR)")
    parser.add_argument("--base-binary", metavar="PATH",
                        help="the tracing section also measures W1 through this build (one from before tracing existed)")
    parser.add_argument("--citus-records", type=int, default=40_000,
                        help="records of the Citus section's zone, saved through the gateway on each engine")
    parser.add_argument("--only", choices=["floor", "floor-modes", "web-services", "moves", "speed", "js-sync", "refusals", "writes", "tracing",
                                           "citus"],
                        help="floor: only W1 and W2 against the floor, with the gateway's CPU a request; "
                             "floor-modes: only the floor in each serving mode (issue 69, step 1), W1 and W2 at 8 and 64 clients; "
                             "web-services: only W9 and W10 beside their GraphQL twins; "
                             "moves: only issue 38's move of 1,000 records beside saving them; "
                             "speed: only issue 39's cold rows, tail sets and W11 with W1 and W2; "
                             "js-sync: only issue 40's sync of 100,000 records by CanopyJS; "
                             "refusals: only issue 48's refused documents beside a small request; "
                             "writes: only W3 and what a batch pays for; "
                             "tracing: only issue 53's W1 with tracing off, at 10 %% and at 100 %% (and --base-binary); "
                             "each prints its table and does not write --output; "
                             "citus: only issue 67's W1-W4 on Citus beside one PostgreSQL, "
                             "written into --output in place of its section there")
    return parser.parse_args()


def main():
    options = parse_options()
    scales = [int(n) for n in options.scales.split(",") if n]
    for tool in ("wrk", "pgbench", "psql"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is needed (apt-get install wrk postgresql-client)")
    common.use_binaries(options.binary, options.floor_binary)
    # The Citus section runs the gateway alone, without the floor.
    needed = (common.BINARY,) if options.only == "citus" else (common.BINARY, common.FLOOR)
    missing = [str(path) for path in needed if not path.exists()]
    if missing and options.binary is None and options.floor_binary is None:
        sys.exit("build first: make bench builds them (swift build --package-path Server --scratch-path .build -c release --product canopy, then --product canopy-floor)")
    if missing:
        sys.exit(f"not found: {', '.join(missing)}")
    if options.only == "floor":
        floor_only(options)
    elif options.only == "floor-modes":
        floor_modes_only(options)
    elif options.only == "web-services":
        web_services_only(options)
    elif options.only == "moves":
        moves_only(options)
    elif options.only == "speed":
        speed_only(options)
    elif options.only == "js-sync":
        js_sync_only(options)
    elif options.only == "refusals":
        refusals_only(options)
    elif options.only == "writes":
        writes_only(options)
    elif options.only == "tracing":
        tracing_only(options)
    elif options.only == "citus":
        citus_only(options)
    else:
        everything(options, scales)


def everything(options, scales):
    """Every section, written to --output."""
    cluster = loading.fresh_cluster()
    setup = loading.load(cluster, options, scales)
    owner, guest, token = setup.owner, setup.guest, setup.owner["token"]
    js_sync.seed_zones(cluster, owner)
    # The load's writes to disk now, not under the cold runs alone (a
    # checkpoint makes no statistics; its spread writes overlapped them).
    cluster.psql("CHECKPOINT")
    cold = speed.cold_start(token, options)
    loading.settle(cluster)
    analysed = speed.cold_start(token, options, "after ANALYZE")

    say("sharing Bench with a READ_ONLY participant; walking the change feed once for tokens at every page; "
        "a cursor 50 pages deep")
    with Gateway():
        loading.share_bench(owner, guest)
        tokens, cursor = loading.walk_feed(token)
        writers = speed.add_writers(cluster)
    token_file = DATA / "feed-tokens.txt"
    token_file.write_text("\n".join(tokens[:-1]) + "\n")
    deep_args = {**RECORDS_ARGS, "c": cursor}

    guest_shares = int(cluster.psql(f"SELECT count(*) FROM canopy.memberships WHERE user_id = {setup.guest_id} "
                                    "AND share_id IS NOT NULL"))
    say("capturing the statements the gateway sends")
    statements = capture_statements(cluster, workloads.all_requests(owner, guest, deep_args, tokens[len(tokens) // 2],
                                                                    setup.scale_zones) + [speed.capture_request(writers)])
    work = workloads.all_workloads(setup, statements, options.records, deep_args, token_file)

    # The floor answers W1 and W2's first page with the gateway's own statements.
    floors = workloads.floors(cluster, statements, work)
    api_token = json.loads(run([common.BINARY, "tokens", "api", "add", "--container", workloads.CONTAINER, "--json",
                                "--data-dir", DATA]))["token"]
    with Gateway(["--container", workloads.CONTAINER]) as gateway, floors[work[0][0]], floors[work[1][0]]:
        rows, floor_rows = sections.run_workloads(cluster, gateway, floors, work, options)
        tails = speed.tail_sets(cluster, work, rows, options)
        writer_row = speed.many_writers(cluster, writers, statements, options)
        web_services = sections.web_services(gateway, workloads.web_services_pairs(token, api_token), options)
        saved = saved_batch_records(cluster)
        under_64 = sections.wide_load(cluster, gateway, floors[work[1][0]], work[1], options)
        membership_rows = sections.memberships(cluster, statements, guest_shares, options)
        cost_rows = sections.batch_costs(cluster, setup.owner_id)
        warm_rows = sections.batch_trigger_costs(cluster, setup.owner_id)
        public64 = sections.public_at_64(cluster, work, options)
        latency = sections.subscription_latency(token, options)
        push = sections.push_latencies(token, options)
        move_times = sections.moves(token, options)
        sync = js_sync.sync_rates(token, options)
        refused = refusals.measure(gateway, options)
    traced = tracing.measure(token, options, options.base_binary)

    replica_rows = sections.replica_comparison(cluster, work[1][3], options)

    text = report.benchmarks_md(options, scales, cluster.psql("SHOW server_version"), setup.people, guest_shares,
                                rows, floor_rows, membership_rows, cost_rows, warm_rows, replica_rows, saved, under_64,
                                latency, push, Gateway.hung, public64, web_services, move_times,
                                {"cold": cold, "analysed": analysed, "tails": tails, "writers": writer_row})
    w4_rate = next(row for row in rows if row[0].startswith("W4"))[2]
    text = text.rstrip("\n") + "\n\n" + "\n".join(js_sync.report_lines(sync, w4_rate))
    text = text.rstrip("\n") + "\n\n" + "\n".join(plan_rates.report_lines())
    text = text.rstrip("\n") + "\n\n" + "\n".join(refusals.report_lines(refused, options))
    text = text.rstrip("\n") + "\n\n" + "\n".join(tracing.report_lines(traced, options))
    Path(options.output).write_text(text)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    # Issue 67: the same user's W1-W4 on Citus beside one PostgreSQL, each
    # on a cluster of its own.
    citus.write_section(options.output, citus.report_lines(citus.measure(options), options))
    say(f"wrote {options.output}")


def citus_only(options):
    """--only citus: issue 67's section, written into --output in place of
    the one there (the rest of the page kept), and printed."""
    lines = citus.report_lines(citus.measure(options), options)
    citus.write_section(options.output, lines)
    print("\n".join([""] + lines), flush=True)
    say(f"wrote the Citus section of {options.output}")


def js_sync_only(options):
    """--only js-sync: issue 40's sync section, printed (without W4's ratio)."""
    cluster = loading.fresh_cluster()
    owner = loading.add_user("bench")
    js_sync.seed_zones(cluster, owner)
    loading.settle(cluster)
    with Gateway():
        sync = js_sync.sync_rates(owner["token"], options)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print("\n".join([""] + js_sync.report_lines(sync)), flush=True)


def refusals_only(options):
    """--only refusals: issue 48's refusals beside a small request; printed."""
    loading.fresh_cluster()
    with Gateway() as gateway:
        rows = refusals.measure(gateway, options)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print("\n".join([""] + refusals.report_lines(rows, options)), flush=True)


def tracing_only(options):
    """--only tracing: issue 53's W1 with tracing off and on; printed."""
    cluster = loading.fresh_cluster()
    setup = loading.load(cluster, options, [])
    loading.settle(cluster)
    rows = tracing.measure(setup.owner["token"], options, options.base_binary)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print("\n".join([""] + tracing.report_lines(rows, options)), flush=True)


def writes_only(options):
    """--only writes: W3 against its pgbench transaction, what a batch pays
    for (cold, by index) and on a warm connection trigger by trigger
    (issue 51, item 2); printed, --output untouched."""
    cluster = loading.fresh_cluster()
    setup = loading.load(cluster, options, [])
    loading.settle(cluster)
    with Gateway():
        graphql(setup.owner["token"], 'mutation { saveZone(zoneName: "Bulk") { zoneName } }')
    statements = capture_statements(cluster, [workloads.modify_request(setup.owner["token"])])
    work = [workloads.w3_workload(setup, statements)]
    with Gateway() as gateway:
        rows, _ = sections.run_workloads(cluster, gateway, {}, work, options)
    cost_rows = sections.batch_costs(cluster, setup.owner_id)
    warm_rows = sections.batch_trigger_costs(cluster, setup.owner_id)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print("\n".join([""] + report.w3_row(rows[0]) + [""] + report.batch_cost_lines(cost_rows, warm_rows)), flush=True)


def floor_only(options):
    """--only floor: W1 and W2's first page through the gateway, pgbench and
    the floor, as everything() runs them; the table printed, --output untouched."""
    cluster = loading.fresh_cluster()
    setup = loading.load(cluster, options, [])
    loading.settle(cluster)
    token = setup.owner["token"]
    say("sharing Bench with a READ_ONLY participant")
    with Gateway():
        loading.share_bench(setup.owner, setup.guest)
    say("capturing the statements the gateway sends")
    statements = capture_statements(cluster, workloads.floor_requests(token))
    work = workloads.floor_workloads(token, statements, options.records)
    floors = workloads.floors(cluster, statements, work)
    with Gateway() as gateway, floors[work[0][0]], floors[work[1][0]]:
        _, floor_rows = sections.run_workloads(cluster, gateway, floors, work, options)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print("\n".join(["", report.FLOOR_HEADING, "",
                     f"Gateway `{common.BINARY}`, floor `{common.FLOOR}`; medians of {options.runs} runs of "
                     f"{options.seconds} s per side; {options.clients} clients; {options.records:,} records in the zone; "
                     "latencies in ms." + (" The gateway did not stop within 30 s of SIGTERM." if Gateway.hung else ""),
                     ""] + report.floor_table(floor_rows)), flush=True)


def floor_modes_only(options):
    """--only floor-modes: the floor in each serving mode on the same data
    (floor_modes.py); the table printed, --output untouched."""
    import floor_modes
    cluster = loading.fresh_cluster()
    setup = loading.load(cluster, options, [])
    loading.settle(cluster)
    token = setup.owner["token"]
    say("capturing the statements the gateway sends")
    statements = capture_statements(cluster, workloads.floor_requests(token))
    work = workloads.floor_workloads(token, statements, options.records)
    floors = workloads.floors(cluster, statements, work)
    medians, placed = floor_modes.measure(floors, work, options)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print("\n".join([""] + floor_modes.report_lines(medians, placed, work, options)), flush=True)


def web_services_only(options):
    """--only web-services: W9 and W10 beside their GraphQL twins, as
    everything() runs them; the table printed, --output untouched."""
    cluster = loading.fresh_cluster()
    setup = loading.load(cluster, options, [])
    loading.settle(cluster)
    api_token = json.loads(run([common.BINARY, "tokens", "api", "add", "--container", workloads.CONTAINER, "--json",
                                "--data-dir", DATA]))["token"]
    with Gateway(["--container", workloads.CONTAINER]) as gateway:
        rows = sections.web_services(gateway, workloads.web_services_pairs(setup.owner["token"], api_token), options)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print("\n".join([""] + plan_rates.report_lines()), flush=True)
    for name, w, g, w50, g50, w99, g99, wcpu, gcpu in rows:
        print(f"{name}: Web Services {w:,.0f} req/s, GraphQL twin {g:,.0f} req/s, twin / WS {g / w:.2f}; "
              f"p50 {w50:.2f} / {g50:.2f} ms; p99 {w99:.2f} / {g99:.2f} ms; gateway CPU {wcpu:.0f} / {gcpu:.0f} µs a request", flush=True)


def moves_only(options):
    """--only moves: issue 38's move of 1,000 records beside saving them; printed."""
    cluster = loading.fresh_cluster()
    setup = loading.load(cluster, options, [])
    loading.settle(cluster)
    with Gateway():
        save_ms, move_ms = sections.moves(setup.owner["token"], options)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print(f"save 1,000 new records (batches of 400): {save_ms:.0f} ms; move 1,000 with descendants: {move_ms:.0f} ms; "
          f"move / save {move_ms / save_ms:.2f}", flush=True)


def speed_only(options):
    """--only speed: issue 39's sections (cold rows, W1 and W2 with the floor
    and CPU, the tail sets, W11) as everything() runs them; printed."""
    cluster = loading.fresh_cluster()
    setup = loading.load(cluster, options, [])
    token = setup.owner["token"]
    cluster.psql("CHECKPOINT")
    cold = speed.cold_start(token, options)
    loading.settle(cluster)
    analysed = speed.cold_start(token, options, "after ANALYZE")
    with Gateway():
        loading.share_bench(setup.owner, setup.guest)
        writers = speed.add_writers(cluster)
    statements = capture_statements(cluster, workloads.floor_requests(token) + [speed.capture_request(writers)])
    work = workloads.floor_workloads(token, statements, options.records)
    floors = workloads.floors(cluster, statements, work)
    with Gateway() as gateway, floors[work[0][0]], floors[work[1][0]]:
        rows, floor_rows = sections.run_workloads(cluster, gateway, floors, work, options)
        tails = speed.tail_sets(cluster, work, rows, options)
        writer_row = speed.many_writers(cluster, writers, statements, options)
    run([common.BINARY, "cluster", "stop", "--data-dir", DATA])
    print("\n".join([""] + report.speed_lines(options, rows, floor_rows, {"cold": cold, "analysed": analysed, "tails": tails, "writers": writer_row})),
          flush=True)


if __name__ == "__main__":
    main()
