"""Analysis: the soak's checks (errors, the RSS trend, connections, the
tail's growth) and its figures per minute."""
import math
import statistics
from collections import defaultdict

from stats import percentile, slope_per_hour


def analyse(args, stats, duration):
    warm = args.warmup_minutes * 60.0
    after = [s for s in stats.samples if s["t"] >= warm and not math.isnan(s["rss"])]
    result = {"duration": duration, "warmup": warm, "checks": []}
    unexpected = stats.unexpected_total()
    result["unexpected"] = unexpected
    result["checks"].append(("no unexpected errors", unexpected == 0, f"{unexpected} unexpected"))

    if len(after) >= 2:
        slope = slope_per_hour([(s["t"], s["rss"]) for s in after])
        first = [s["rss"] for s in after if s["t"] < warm + 60] or [after[0]["rss"]]
        last = [s["rss"] for s in after if s["t"] >= after[-1]["t"] - 60] or [after[-1]["rss"]]
        first_rss, last_rss = statistics.fmean(first), statistics.fmean(last)
        drift = (last_rss - first_rss) / first_rss
        result.update(slope=slope, first_rss=first_rss, last_rss=last_rss, drift=drift,
                      peak_rss=max(s["rss"] for s in stats.samples if not math.isnan(s["rss"])))
        span = (after[-1]["t"] - after[0]["t"]) / 60.0
        if span >= args.min_slope_minutes:
            result["checks"].append((f"RSS slope after warm-up < {args.max_rss_slope:g} MB/hour",
                                     slope < args.max_rss_slope, f"{slope:+.1f} MB/hour"))
        else:
            # A few hundred kB of allocator noise over two minutes makes tens
            # of MB an hour: too short a span to extrapolate, so not judged.
            result["checks"].append((f"RSS slope after warm-up < {args.max_rss_slope:g} MB/hour", None,
                                     f"{slope:+.1f} MB/hour over {span:.1f} min: not judged under "
                                     f"{args.min_slope_minutes:g} min after warm-up"))
        result["checks"].append((f"last minute's RSS within {args.max_rss_drift:.0%} of the first after warm-up",
                                 abs(drift) <= args.max_rss_drift,
                                 f"{first_rss:.1f} MB -> {last_rss:.1f} MB ({drift:+.1%})"))
        connections = [s["connections"] for s in after if s["connections"] >= 0]
        if connections:
            # The pool opens connections under load and closes idle ones, so
            # the count moves; stable means bounded and not creeping upward.
            result.update(conn_min=min(connections), conn_max=max(connections))
            span = (after[-1]["t"] - after[0]["t"]) / 2.0
            middle_max = max([s["connections"] for s in after if s["t"] < after[0]["t"] + span and s["connections"] >= 0] or [0])
            last_max = max([s["connections"] for s in after if s["t"] >= after[0]["t"] + span and s["connections"] >= 0] or [0])
            result["checks"].append((f"PostgreSQL connections after warm-up stay <= {args.max_connections}",
                                     max(connections) <= args.max_connections,
                                     f"min {min(connections)}, max {max(connections)}"))
            result["checks"].append((f"the second half's most connections exceed the first half's by <= {args.max_connection_spread}",
                                     last_max - middle_max <= args.max_connection_spread,
                                     f"{middle_max} -> {last_max}"))
        else:
            result["checks"].append(("PostgreSQL connections sampled", False, "no sample"))
        threads = [s["threads"] for s in after]
        files = [s["files"] for s in after]
        result.update(threads=(min(threads), max(threads)), files=(min(files), max(files)))
    else:
        result["checks"].append(("samples after warm-up", False, f"{len(after)} samples: run longer than the warm-up"))

    third = duration / 3.0
    middle = [ms for t, ms in stats.http if third <= t < 2 * third]
    last = [ms for t, ms in stats.http if t >= 2 * third]
    p99_middle, p99_last = percentile(middle, 99), percentile(last, 99)
    result.update(p99_middle=p99_middle, p99_last=p99_last)
    if middle and last:
        result["checks"].append((f"p99 of the last third <= {args.max_p99_ratio:g} x the middle third's",
                                 p99_last <= args.max_p99_ratio * p99_middle,
                                 f"{p99_middle:.1f} ms -> {p99_last:.1f} ms"))
    else:
        result["checks"].append(("requests in the middle and last thirds", False, "none"))
    result["passed"] = all(ok is not False for _, ok, _ in result["checks"])
    return result


def per_minute(stats, duration):
    minutes = defaultdict(list)
    last = max(0.0, duration - 1e-6)
    for t, ms in stats.http:   # requests in flight at the end finish a little after it
        minutes[int(min(t, last) // 60)].append(ms)
    samples = defaultdict(list)
    for s in stats.samples:
        # The last sample, taken as the run ends, belongs to its last minute.
        samples[int(min(max(0.0, s["t"]), last) // 60)].append(s)
    rows = []
    for minute in sorted(set(minutes) | set(samples)):
        values, ss = minutes.get(minute, []), samples.get(minute, [])
        rss = [s["rss"] for s in ss if not math.isnan(s["rss"])]
        conns = [s["connections"] for s in ss if s["connections"] >= 0]
        rows.append((minute, len(values), percentile(values, 50), percentile(values, 99),
                     statistics.fmean(rss) if rss else float("nan"),
                     f"{min(conns)}–{max(conns)}" if conns else "–"))
    return rows
