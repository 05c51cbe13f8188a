"""Issue 40: CanopyJS's SyncEngine syncing a zone of 100,000 records in one
Node process against the release gateway, beside the same pages fetched raw
(fetch and JSON.parse, no client) by one Node process; records/s and peak
memory, medians of --runs."""
import json
import statistics
import subprocess

from common import PORT, ROOT, say

SCRIPT = ROOT / "scripts" / "bench" / "js_sync.mjs"
ZONE, RECORDS = "Sync100k", 100_000
SMALL_ZONE, SMALL_RECORDS = "Sync20k", 20_000   # the same sync of a fifth of the zone: memory must not follow the size


def seed_zones(cluster, owner):
    """The zones the sync reads: 100,000 and 20,000 Fast records of the owner's."""
    import loading
    loading.seed(cluster, owner, ZONE, RECORDS)
    loading.seed(cluster, owner, SMALL_ZONE, SMALL_RECORDS)


def one_run(token, mode, zone=ZONE, expected=RECORDS):
    output = subprocess.run(["node", "--expose-gc", str(SCRIPT), f"http://127.0.0.1:{PORT}", token, zone, mode],
                            check=True, capture_output=True, text=True, timeout=900).stdout
    result = json.loads(output.strip().splitlines()[-1])
    if result["records"] != expected:
        raise SystemExit(f"js sync ({mode}, {zone}): {result['records']:,} records, not {expected:,}")
    return result


def sync_rates(token, options):
    """{engine: {...}, raw: {...}}: medians of rate and peak memory over the runs, alternating the modes."""
    results = {"engine": [], "raw": []}
    for run in range(options.runs):
        for mode in ("raw", "engine"):
            results[mode].append(one_run(token, mode))
            say(f"  js sync run {run + 1} {mode}: {results[mode][-1]['rate']:,.0f} records/s, "
                f"peak RSS {results[mode][-1]['peakRSSMB']:.0f} MB")
    small = [one_run(token, "engine", SMALL_ZONE, SMALL_RECORDS) for _ in range(options.runs)]
    say(f"  js sync of {SMALL_RECORDS:,}: peak RSS {max(r['peakRSSMB'] for r in small):.0f} MB")
    summary = {mode: {"rate": statistics.median(r["rate"] for r in runs),
                   "seconds": statistics.median(r["seconds"] for r in runs),
                   "peakRSSMB": max(r["peakRSSMB"] for r in runs),
                   "peakHeapMB": max(r["peakHeapMB"] for r in runs),
                   "baseRSSMB": statistics.median(r["baseRSSMB"] for r in runs)}
            for mode, runs in results.items()}
    summary["small"] = {"rate": statistics.median(r["rate"] for r in small), "peakRSSMB": max(r["peakRSSMB"] for r in small),
                        "peakHeapMB": max(r["peakHeapMB"] for r in small)}
    return summary


HEADING = "## CanopyJS: a web app's first sync (issue 40)"


def report_lines(sync, w4_rate=None):
    """BENCHMARKS.md's section: the engine beside raw pages and W4."""
    engine, raw, small = sync["engine"], sync["raw"], sync["small"]
    lines = [HEADING, "",
             f"One Node {NODE_VERSION} process syncs a zone of {RECORDS:,} records from the release gateway over loopback: "
             "CanopyJS's `SyncEngine` (pages of 400 from `zoneChanges`, every record decoded into a `CanopyRecord` and "
             "handed to a delegate that counts it), beside the same pages fetched raw by one Node process (`fetch` and "
             "`JSON.parse`, no client). Medians of the runs; peak memory is the largest seen in any run. "
             "W4 is 16 connections reading pages at random positions at once; a sync is one chain of pages, each "
             "asked with the token the previous page answered, so one client keeps at most one request in flight "
             "(the engine asks for the next page before handing a page to the app, so the app's work overlaps the "
             "server's). The raw row is that chain's ceiling on this stack.", "",
             "| | records/s | time | peak RSS | peak JS heap |", "|---|---|---|---|---|",
             f"| SyncEngine, {RECORDS:,} records | {engine['rate']:,.0f} | {engine['seconds']:.1f} s | {engine['peakRSSMB']:.0f} MB | {engine['peakHeapMB']:.0f} MB |",
             f"| SyncEngine, {SMALL_RECORDS:,} records | {small['rate']:,.0f} | | {small['peakRSSMB']:.0f} MB | {small['peakHeapMB']:.0f} MB |",
             f"| raw pages, {RECORDS:,} records | {raw['rate']:,.0f} | {raw['seconds']:.1f} s | {raw['peakRSSMB']:.0f} MB | {raw['peakHeapMB']:.0f} MB |",
             ""]
    bounded = engine["peakHeapMB"] <= small["peakHeapMB"] * 1.5 + 8
    goal = [f"| engine / raw pages (one client each, the same chain) | {engine['rate'] / raw['rate']:.2f} | |"]
    if w4_rate:
        ratio = engine["rate"] / w4_rate
        goal.insert(0, f"| engine ≥ 0.6× W4 ({w4_rate:,.0f} records/s) | {ratio:.2f}× | {'met' if ratio >= 0.6 else '**not met**'} |")
    goal.append(f"| memory bounded by a page, not the zone (peak heap at {RECORDS:,} within 1.5× of {SMALL_RECORDS:,}, +8 MB) | "
                f"{engine['peakHeapMB']:.0f} / {small['peakHeapMB']:.0f} MB | {'met' if bounded else '**not met**'} |")
    return lines + ["| goal | measured | |", "|---|---|---|"] + goal + [""]


def node_version():
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "(node missing)"


NODE_VERSION = node_version()
