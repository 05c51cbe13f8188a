#!/usr/bin/env python3
"""Runs every canopy-fuzz target (docs/FUZZING.md) for a set time.

For each target: first the regression inputs under Server/Fuzz/Regressions/TARGET
(every crash found so far, kept; each must now pass), then libFuzzer for
--seconds, starting from the committed seeds (Server/Fuzz/Corpus/TARGET) and the
inputs earlier runs found (.build-fuzz/corpus/TARGET, where new ones go;
the committed seeds are never written). A crash saves its input under
.build-fuzz/crashes/ and fails the run, naming the file and the way to
replay it. With --report, writes a table of executions and coverage per
target (markdown).

  python3 scripts/fuzz/fuzz.py --seconds 10                 # make test
  python3 scripts/fuzz/fuzz.py --seconds 300 --report docs/fuzz/RESULTS.md   # make fuzz
"""

import argparse
import datetime
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Built into the server's .build (make fuzz-build); what fuzzing finds is
# kept apart, in .build-fuzz, so a clean of one leaves the other.
BINARY = ROOT / ".build" / "debug" / "canopy-fuzz"
WORK = ROOT / ".build-fuzz"
# The committed seeds and the regression inputs (crashes found before).
FUZZ = ROOT / "Server" / "Fuzz"
# Swift's own backtracer catches a trap before libFuzzer's handler does, and
# then libFuzzer never writes the input that crashed: turn it off.
ENV = {**os.environ, "SWIFT_BACKTRACE": "enable=no"}


# Per input: libFuzzer counts an input that runs longer than `timeout`
# seconds as a finding (a "timeout-…" artifact), as it does a crash. The
# GraphQL front (issue 64: validation once grew with the square of a
# document's length) gets documents up to 64 KiB and 30 s each. libFuzzer's
# timeout is wall-clock time: the worst document within the bounds found so
# far (4,900 unknown fields in one selection, each an error, just under the
# 5,000 selections allowed) takes 1.4 s of CPU in a debug build, and timed
# out at 5 s beside the stories and the citus-gateway tier on 2 cores. The
# cost grows linearly (0.28 s at 750 fields, 0.56 s at 1,500, 1.36 s at
# 3,000); the square of 64 KiB would take minutes, which 30 s still catches.
PER_INPUT_DEFAULT = {"timeout": 10, "max_len": 4096}
PER_INPUT = {"graphql": {"timeout": 30, "max_len": 65536}}
# A timeout is then checked on its own: the input is replayed alone three
# times, and only if one replay takes a quarter of the timeout in CPU time
# (or crashes) is it a finding. A jwks input of 59 bytes "timed out" at 10 s
# beside make test's stories (load average 22 on 2 cores) and replays in
# 2 ms: the process had waited for a core, which libFuzzer's wall clock
# cannot tell from a slow input (docs/FUZZING.md, "Timeouts under load").
SLOW_SHARE = 0.25


def say(text):
    print(f"==> {text}", flush=True)


def targets():
    out = subprocess.run([str(BINARY), "list"], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def regressions(target):
    folder = FUZZ / "Regressions" / target
    files = sorted(p for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []
    if not files:
        return 0, None
    result = subprocess.run([str(BINARY), target, *map(str, files)], capture_output=True, text=True, timeout=600, env=ENV)
    if result.returncode != 0:
        return len(files), result.stdout[-3000:] + result.stderr[-3000:]
    return len(files), None


def fuzz(target, seconds):
    corpus = WORK / "corpus" / target
    corpus.mkdir(parents=True, exist_ok=True)
    crashes = WORK / "crashes"
    crashes.mkdir(parents=True, exist_ok=True)
    seeds = FUZZ / "Corpus" / target
    limits = PER_INPUT.get(target, PER_INPUT_DEFAULT)
    command = [str(BINARY), target, f"-max_total_time={seconds}", "-print_final_stats=1", f"-timeout={limits['timeout']}",
               "-rss_limit_mb=4096", f"-max_len={limits['max_len']}", f"-artifact_prefix={crashes}/{target}-", str(corpus)]
    if seeds.is_dir():
        command.append(str(seeds))
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 600, env=ENV)
    elapsed = time.monotonic() - started
    output = result.stderr + result.stdout
    stats = {"target": target, "seconds": elapsed, "status": result.returncode}
    for key in ("number_of_executed_units", "average_exec_per_sec", "new_units_added", "peak_rss_mb"):
        match = re.search(rf"stat::{key}:\s+(\d+)", output)
        stats[key] = int(match.group(1)) if match else None
    lines = [line for line in output.splitlines() if " cov: " in line]
    last = lines[-1] if lines else ""
    for key in ("cov", "ft"):
        match = re.search(rf"\b{key}: (\d+)", last)
        stats[key] = int(match.group(1)) if match else None
    match = re.search(r"corp: (\d+)/(\S+)", last)
    stats["corpus"] = f"{match.group(1)} ({match.group(2)})" if match else "?"
    artifact = re.search(r"Test unit written to (\S+)", output)
    stats["artifact"] = artifact.group(1) if artifact else None
    stats["tail"] = "\n".join(l for l in output.splitlines() if not l.startswith("0x"))[-4000:]
    return stats


def children_cpu():
    """User and system seconds of this process's children that have exited."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timeout_replayed(target, artifact):
    """A timeout artifact replayed alone three times: (crashed, worst CPU seconds of a replay)."""
    limit = PER_INPUT.get(target, PER_INPUT_DEFAULT)["timeout"]
    worst = 0.0
    for _ in range(3):
        before = children_cpu()
        try:
            result = subprocess.run([str(BINARY), target, artifact], capture_output=True, text=True, timeout=limit * 20, env=ENV)
        except subprocess.TimeoutExpired:
            return False, float(limit * 20)
        worst = max(worst, children_cpu() - before)
        if result.returncode != 0:
            return True, worst
    return False, worst


def report(path, rows, seconds):
    """Writes the results table; rows of targets not run now are kept from
    the report already there (so one target can be run again alone)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = "| target | when | seconds | executions | exec/s | cov (edges) | ft | corpus (inputs, size) | new inputs | peak RSS MB | result |"
    table = {}
    order = []
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| ") and len(cells) == 11 and cells[0] not in ("target", "---"):
                table[cells[0]] = line
                order.append(cells[0])
    for r in rows:
        verdict = "no crash" if r["status"] == 0 else f"CRASH: {r['artifact'] or 'exit ' + str(r['status'])}"
        execs = r["number_of_executed_units"]
        table[r["target"]] = (f"| {r['target']} | {now} | {seconds} | {format(execs, ',') if execs is not None else '?'} | "
                              f"{r['average_exec_per_sec'] or '?'} | {r['cov'] or '?'} | {r['ft'] or '?'} | {r['corpus']} | "
                              f"{r['new_units_added'] if r['new_units_added'] is not None else '?'} | {r['peak_rss_mb'] or '?'} | {verdict} |")
        if r["target"] not in order:
            order.append(r["target"])
    lines = [
        "# Fuzzing results",
        "",
        "Written by `make fuzz` (scripts/fuzz/fuzz.py): each target on one core of this machine (2 cores), from the "
        "committed seeds plus what earlier runs here found. *cov* counts the instrumented edges (basic-block "
        "transitions) of Canopy's own modules the corpus reaches, *ft* libFuzzer's finer features (edges with hit "
        "counts). docs/FUZZING.md says how it works and what each target checks.",
        "",
        header,
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ] + [table[t] for t in order]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n")
    say(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=10, help="how long each target runs (default 10)")
    parser.add_argument("--targets", default="", help="comma-separated targets (default: all)")
    parser.add_argument("--report", help="write the results table (markdown) here")
    args = parser.parse_args()
    if not BINARY.exists():
        sys.exit(f"{BINARY} is missing: build it with `CANOPY_FUZZ=1 swift build --package-path Server --scratch-path .build --product canopy-fuzz` (make fuzz-build does)")
    # The folders were once at the root, and a wrong path read no input
    # without a word: say so instead.
    for folder in (FUZZ / "Regressions", FUZZ / "Corpus"):
        if not folder.is_dir():
            sys.exit(f"{folder} is missing: the regression inputs and seeds live there")
    chosen = [t for t in args.targets.split(",") if t] or targets()
    rows, failed = [], []
    for index, target in enumerate(chosen, 1):
        count, failure = regressions(target)
        if failure:
            failed.append(target)
            say(f"{target}: a regression input crashes again:\n{failure}")
            continue
        say(f"[{index}/{len(chosen)}] {target}: {count} regression input(s) pass; fuzzing for {args.seconds} s")
        stats = fuzz(target, args.seconds)
        rows.append(stats)
        execs = stats["number_of_executed_units"]
        say(f"{target}: {execs if execs is not None else '?'} executions, {stats['average_exec_per_sec']} /s, "
            f"cov {stats['cov']}, ft {stats['ft']}, corpus {stats['corpus']}")
        if stats["status"] != 0 and stats["artifact"] and f"/{target}-timeout-" in stats["artifact"]:
            limit = PER_INPUT.get(target, PER_INPUT_DEFAULT)["timeout"]
            crashed, cpu = timeout_replayed(target, stats["artifact"])
            if not crashed and cpu < limit * SLOW_SHARE:
                say(f"{target}: libFuzzer's {limit} s wall-clock timeout fired, but the input ({stats['artifact']}) "
                    f"replays alone in {cpu * 1000:.0f} ms of CPU at worst of 3: the machine was busy, not the input; "
                    "not a finding")
                stats["status"] = 0
                stats["artifact"] = None
                continue
            say(f"{target}: the timeout's input replays in {cpu:.2f} s of CPU{' and crashes' if crashed else ''}: a finding")
        if stats["status"] != 0:
            failed.append(target)
            say(f"{target}: CRASH (exit {stats['status']}), input saved as {stats['artifact']}\n{stats['tail']}\n"
                f"replay: {BINARY} {target} {stats['artifact']}\n"
                f"keep it: copy it to Server/Fuzz/Regressions/{target}/ with the fix")
    if args.report:
        report(args.report, rows, args.seconds)
    if failed:
        sys.exit(f"fuzzing found crashes in: {', '.join(failed)}")
    say(f"{len(rows)} target(s), no crash")


if __name__ == "__main__":
    main()
