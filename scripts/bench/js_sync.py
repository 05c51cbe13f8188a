"""Issues 40 and 51: a first sync of a zone of 100,000 records against the
release gateway. CanopyJS's SyncEngine in one Node process, in ranges (the
default since issue 51) and as one chain of pages, beside the same pages
fetched raw (fetch and JSON.parse, no client) as one chain and in ranges;
CanopyKit's SyncEngine (Server/Benchmarks/KitSync, release build) in ranges and as
one chain, beside the same pages read raw by the same Swift stack (URLSession and
JSONSerialization, no CanopyKit). Records/s, the client's CPU a record (its
user and system time, read from outside when it exits) and peak memory,
medians of --runs. Issue 69: the engines' own cost is their CPU a record
against their raw twin's, which does not depend on how the two cores are
shared with the gateway and PostgreSQL."""
import json
import os
import resource
import statistics
import subprocess
from pathlib import Path

from common import PORT, ROOT, say

SCRIPT = ROOT / "scripts" / "bench" / "js_sync.mjs"
KIT = Path(os.environ.get("CANOPY_BENCH_KIT_SYNC", ROOT / ".build" / "release" / "canopykit-sync"))
RANGES = 8        # CanopyJS's default firstSyncRanges
KIT_RANGES = 6    # CanopyKit's default firstSyncRanges
MODES = ("raw", "raw-ranges", "engine-chain", "engine", "kit-raw", "kit-raw-ranges", "kit-chain", "kit")
ZONE, RECORDS = "Sync100k", 100_000
SMALL_ZONE, SMALL_RECORDS = "Sync20k", 20_000   # the same sync of a fifth of the zone: memory must not follow the size


def seed_zones(cluster, owner):
    """The zones the sync reads: 100,000 and 20,000 Fast records of the owner's."""
    import loading
    loading.seed(cluster, owner, ZONE, RECORDS)
    loading.seed(cluster, owner, SMALL_ZONE, SMALL_RECORDS)


def children_cpu():
    """User and system seconds of this process's children that have exited."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(token, mode, zone=ZONE, expected=RECORDS):
    if mode.startswith("kit"):
        ranges = KIT_RANGES if mode in ("kit", "kit-raw-ranges") else 1
        command = [str(KIT), f"http://127.0.0.1:{PORT}", token, zone, str(ranges)] + (["raw"] if "raw" in mode else [])
    else:
        command = ["node", "--expose-gc", str(SCRIPT), f"http://127.0.0.1:{PORT}", token, zone, mode, str(RANGES)]
    before = children_cpu()
    output = subprocess.run(command, check=True, capture_output=True, text=True, timeout=900).stdout
    cpu = children_cpu() - before
    result = json.loads(output.strip().splitlines()[-1])
    result["cpuMicrosPerRecord"] = cpu * 1e6 / max(result["records"], 1)
    if result["records"] != expected:
        raise SystemExit(f"js sync ({mode}, {zone}): {result['records']:,} records, not {expected:,}")
    return result


def sync_rates(token, options):
    """{engine: {...}, raw: {...}}: medians of rate and peak memory over the runs, alternating the modes."""
    modes = [mode for mode in MODES if not mode.startswith("kit") or KIT.exists()]
    results = {mode: [] for mode in modes}
    for run in range(options.runs):
        for mode in modes:
            results[mode].append(one_run(token, mode))
            say(f"  first sync run {run + 1} {mode}: {results[mode][-1]['rate']:,.0f} records/s, "
                f"{results[mode][-1]['cpuMicrosPerRecord']:.1f} client CPU µs a record, "
                f"peak RSS {results[mode][-1]['peakRSSMB']:.0f} MB")
    small = [one_run(token, "engine", SMALL_ZONE, SMALL_RECORDS) for _ in range(options.runs)]
    say(f"  js sync of {SMALL_RECORDS:,}: peak RSS {max(r['peakRSSMB'] for r in small):.0f} MB")
    summary = {mode: {"rate": statistics.median(r["rate"] for r in runs),
                   "seconds": statistics.median(r["seconds"] for r in runs),
                   "cpuMicrosPerRecord": statistics.median(r["cpuMicrosPerRecord"] for r in runs),
                   "peakRSSMB": max(r["peakRSSMB"] for r in runs),
                   "peakHeapMB": max(r.get("peakHeapMB", 0) for r in runs),
                   "baseRSSMB": statistics.median(r.get("baseRSSMB", 0) for r in runs)}
            for mode, runs in results.items()}
    summary["small"] = {"rate": statistics.median(r["rate"] for r in small), "peakRSSMB": max(r["peakRSSMB"] for r in small),
                        "peakHeapMB": max(r["peakHeapMB"] for r in small)}
    return summary


HEADING = "## A first sync: CanopyJS and CanopyKit (issues 40 and 51)"

LABELS = {
    "engine": f"CanopyJS SyncEngine, {RANGES} ranges (default)",
    "engine-chain": "CanopyJS SyncEngine, one chain (`firstSyncRanges: 1`)",
    "raw": "raw pages, one chain",
    "raw-ranges": f"raw pages, {RANGES} ranges",
    "kit-raw": "raw pages in Swift (URLSession, JSONSerialization), one chain",
    "kit-raw-ranges": f"raw pages in Swift, {KIT_RANGES} ranges",
    "kit": f"CanopyKit SyncEngine, {KIT_RANGES} ranges (default)",
    "kit-chain": "CanopyKit SyncEngine, one chain",
}


def report_lines(sync, w4_rate=None):
    """BENCHMARKS.md's section: both engines, in ranges and as one chain, beside raw pages and W4."""
    engine, raw, small = sync["engine"], sync["raw"], sync["small"]
    lines = [HEADING, "",
             f"One process syncs a zone of {RECORDS:,} records from the release gateway over loopback, pages of 400 "
             f"from `zoneChanges`. CanopyJS (Node {NODE_VERSION}): every record decoded into a `CanopyRecord` and "
             "handed to a delegate that counts it. CanopyKit (`Server/Benchmarks/KitSync`, release, Foundation's URLSession "
             "on Linux): every record decoded into a `Record`. Raw: `fetch` and `JSON.parse` in one Node process, no "
             "client; raw in Swift: the same pages through URLSession and JSONSerialization, no CanopyKit. Client CPU is "
             "the client process's user and system time over the records, read when it exits: unlike records/s, it does "
             "not depend on how the two cores are shared with the gateway and PostgreSQL. \"Ranges\" is issue 51's first sync: `zoneRanges` cuts the zone into ranges read at once, then "
             "the feed is followed from the position (docs/CHANGE_FEEDS.md); \"one chain\" asks each page with the "
             "token the previous one answered. W4 is 16 connections reading pages at random positions at once. "
             "Medians of the runs; peak memory is the largest seen in any run.", "",
             "| | records/s | client CPU a record | time | peak RSS | peak JS heap |", "|---|---|---|---|---|---|"]
    for mode in MODES:
        if mode in sync:
            row = sync[mode]
            heap = f"{row['peakHeapMB']:.0f} MB" if not mode.startswith("kit") else ""
            lines.append(f"| {LABELS[mode]}, {RECORDS:,} records | {row['rate']:,.0f} | {row['cpuMicrosPerRecord']:.1f} µs | {row['seconds']:.1f} s | "
                         f"{row['peakRSSMB']:.0f} MB | {heap} |")
    lines += [f"| CanopyJS SyncEngine, {RANGES} ranges, {SMALL_RECORDS:,} records | {small['rate']:,.0f} | | | "
              f"{small['peakRSSMB']:.0f} MB | {small['peakHeapMB']:.0f} MB |", ""]
    bounded = engine["peakHeapMB"] <= small["peakHeapMB"] * 1.5 + 8
    goal = [f"| CanopyJS engine / raw pages in ranges (its ceiling on this stack) | {engine['rate'] / sync['raw-ranges']['rate']:.2f} | |",
            f"| ranges / one chain: CanopyJS | {engine['rate'] / sync['engine-chain']['rate']:.2f}× | |"]
    if "kit" in sync:
        goal.append(f"| ranges / one chain: CanopyKit | {sync['kit']['rate'] / sync['kit-chain']['rate']:.2f}× | |")
    # Issue 69: each engine's client CPU a record within 1.5× of its raw twin's (same ranges).
    for engine_mode, raw_mode, name in (("engine", "raw-ranges", "CanopyJS"), ("kit", "kit-raw-ranges", "CanopyKit")):
        if engine_mode in sync and raw_mode in sync:
            ratio = sync[engine_mode]["cpuMicrosPerRecord"] / sync[raw_mode]["cpuMicrosPerRecord"]
            goal.append(f"| {name} first sync's client CPU a record ≤ 1.5× raw pages' ({sync[engine_mode]['cpuMicrosPerRecord']:.1f} / "
                        f"{sync[raw_mode]['cpuMicrosPerRecord']:.1f} µs) | {ratio:.2f}× | {'met' if ratio <= 1.5 else '**not met**'} |")
    if w4_rate:
        for mode, name in (("engine", "CanopyJS"), ("kit", "CanopyKit")):
            if mode in sync:
                ratio = sync[mode]["rate"] / w4_rate
                goal.insert(0, f"| {name} first sync ≥ 0.6× W4 ({w4_rate:,.0f} records/s) | {ratio:.2f}× | "
                               f"{'met' if ratio >= 0.6 else '**not met**'} |")
    goal.append(f"| memory bounded by a page, not the zone (peak heap at {RECORDS:,} within 1.5× of {SMALL_RECORDS:,}, +8 MB) | "
                f"{engine['peakHeapMB']:.0f} / {small['peakHeapMB']:.0f} MB | {'met' if bounded else '**not met**'} |")
    return lines + ["| goal | measured | |", "|---|---|---|"] + goal + [""]


def node_version():
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "(node missing)"


NODE_VERSION = node_version()
