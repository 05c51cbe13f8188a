"""Issue 69 (P1): what planning did for each workload's requests, read from
the gateway's `/metrics` (`canopy_plans_total{outcome}`) before and after
the workload's gateway runs. BENCHMARKS.md gets the share of plans served
from the plan cache for each workload, so a workload whose plans are still
made per request shows."""
import re
import urllib.request

from common import PORT

OUTCOMES = ("hit", "miss", "replanned", "uncacheable", "off", "uncached")


def outcomes(port=PORT):
    """canopy_plans_total by outcome ({} before the gateway's first plan)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {match[1]: float(match[2]) for match in re.finditer(r'^canopy_plans_total\{outcome="(\w+)"\} (\S+)$', text, re.M)}


class Recorder:
    """The outcomes of each named workload, summed over differences of
    `outcomes()` around its gateway runs (nothing else may use the gateway
    meanwhile)."""

    def __init__(self):
        self.seen = {}

    def add(self, name, before):
        """Adds what planning did since `before` (an `outcomes()`) to `name`'s."""
        after = outcomes()
        counts = self.seen.setdefault(name, {})
        for key in OUTCOMES:
            delta = after.get(key, 0) - before.get(key, 0)
            if delta > 0:
                counts[key] = counts.get(key, 0) + delta

    def around(self, name):
        recorder = self

        class Around:
            def __enter__(self):
                self.before = outcomes()

            def __exit__(self, *_):
                recorder.add(name, self.before)
        return Around()


RECORDER = Recorder()


def report_lines(seen=None):
    """BENCHMARKS.md's table: each workload's plans by outcome, and the share
    served from the cache."""
    seen = RECORDER.seen if seen is None else seen
    lines = ["## Plans served from the plan cache (issue 69)", "",
             "What planning did for each workload's requests through the gateway, from `canopy_plans_total{outcome}` on "
             "its `/metrics` before and after the workload's gateway runs (docs/PLAN_CACHE.md). *hit*: bound into a "
             "statement kept from an earlier request; *uncached*: an operation the cache does not serve yet, planned "
             "every time.", "",
             "| workload | plans | hit | miss | uncached | other | served from the cache |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, counts in seen.items():
        total = sum(counts.values())
        if total == 0:
            continue
        other = total - counts.get("hit", 0) - counts.get("miss", 0) - counts.get("uncached", 0)
        lines.append(f"| {name} | {total:,.0f} | {counts.get('hit', 0):,.0f} | {counts.get('miss', 0):,.0f} | "
                     f"{counts.get('uncached', 0):,.0f} | {other:,.0f} | {counts.get('hit', 0) / total:.1%} |")
    return lines
