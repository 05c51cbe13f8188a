"""The soak's report: SOAK.md and soak.png."""
import statistics
import time

from analysis import per_minute
from processes import BINARY
from sampler import SAMPLE_SECONDS
from stats import percentile
from users import RECORDS_PER_ZONE, ZONES


def write_report(path, args, stats, result, gateway, log_errors, plot_name):
    lines = []
    add = lines.append
    add("# Soak (issue 20 part 4)")
    add("")
    add(f"Written by `scripts/soak/soak.py` ({'`make soak`' if args.minutes == 30 else 'a shorter run'}) on "
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}: **{'PASSED' if result['passed'] else 'FAILED'}**.")
    add("")
    add(f"![RSS, PostgreSQL connections and latency over time]({plot_name})")
    add("")
    add("## Configuration")
    add("")
    add("| setting | value |")
    add("|---|---|")
    add(f"| binary | `{BINARY}` |")
    add(f"| duration | {result['duration'] / 60:.1f} minutes ({args.minutes:g} asked), warm-up {args.warmup_minutes:g} minutes |")
    add(f"| simulated users | {args.users}, one thread each, think time exponential with mean {args.think_ms:g} ms |")
    add(f"| gateway | `canopy serve --rate-limit 0` on 127.0.0.1:{args.port}, embedded cluster in `{args.data_dir}` |")
    add(f"| data | {len(ZONES) + 1} zones per user, record names bounded at {RECORDS_PER_ZONE} a zone |")
    add(f"| sampling | every {SAMPLE_SECONDS:g} s: gateway VmRSS, threads, open files; connections to `canopy` in pg_stat_activity |")
    add(f"| seed | {args.seed} |")
    add("")
    add("## Checks")
    add("")
    add("| check | result | measured |")
    add("|---|---|---|")
    for name, ok, measured in result["checks"]:
        add(f"| {name} | {'not judged' if ok is None else 'pass' if ok else '**FAIL**'} | {measured} |")
    add("")
    if "slope" in result:
        add(f"Gateway RSS: first minute after warm-up {result['first_rss']:.1f} MB, last minute {result['last_rss']:.1f} MB "
            f"({result['drift']:+.1%}), least-squares slope after warm-up {result['slope']:+.1f} MB/hour, peak "
            f"{result['peak_rss']:.1f} MB. PostgreSQL connections after warm-up: min {result.get('conn_min')}, max "
            f"{result.get('conn_max')}. Gateway threads {result['threads'][0]}–{result['threads'][1]}, open files "
            f"{result['files'][0]}–{result['files'][1]}. p99 middle third {result['p99_middle']:.1f} ms, last third "
            f"{result['p99_last']:.1f} ms.")
        add("")
    add(f"The gateway {'stopped on SIGTERM' if gateway.stopped_cleanly else 'did NOT stop within 30 s of SIGTERM (killed)'}; "
        f"its log holds {len(log_errors)} error lines.")
    add("")
    add("## Requests by kind")
    add("")
    add("| kind | requests | p50 ms | p99 ms | expected errors | unexpected errors |")
    add("|---|---:|---:|---:|---|---|")
    for kind in sorted(set(stats.totals) | set(stats.unexpected)):
        values = stats.latencies.get(kind, [])
        p50, p99 = (f"{percentile(values, 50):.1f}", f"{percentile(values, 99):.1f}") if values else ("–", "–")
        expected = ", ".join(f"{code} {n}" for code, n in sorted(stats.expected.get(kind, {}).items())) or ""
        unexpected = ", ".join(f"{d} {n}" for d, n in sorted(stats.unexpected.get(kind, {}).items())) or ""
        add(f"| {kind} | {stats.totals.get(kind, 0)} | {p50} | {p99} | "
            f"{expected} | {unexpected} |")
    total = sum(stats.totals.values())
    add(f"| **all** | {total} | | | {sum(sum(c.values()) for c in stats.expected.values())} | {result['unexpected']} |")
    add("")
    if stats.deviations:
        add("## Known deviations from docs/API.md")
        add("")
        add("Answers the contract does not allow but that are known (`KNOWN_DEVIATIONS` in `scripts/soak/client.py`, "
            "which says why); not counted as unexpected errors (`--strict` counts them).")
        add("")
        add("| kind | code | count |")
        add("|---|---|---:|")
        for kind, codes in sorted(stats.deviations.items()):
            for code, n in sorted(codes.items()):
                add(f"| {kind} | {code} | {n} |")
        add("")
    add("`ws.open` is the WebSocket upgrade to `connection_ack`; `ws.notify` the time from a commit's HTTP answer "
        "to the subscriber's `next`; `ws.close`/`ws.drop` count sockets closed after `complete` or without it. "
        "`share.*` and `bad.*` are the sharing steps and the deliberately bad requests; their expected codes are listed.")
    add("")
    if stats.examples:
        add("## First unexpected errors and known deviations")
        add("")
        for t, kind, description, detail in stats.examples:
            add(f"- {t} s, {kind}: {description}: `{detail.replace('`', chr(39))[:300]}`")
        add("")
    if log_errors:
        add("## Gateway log: error lines (first 10)")
        add("")
        add("```")
        lines.extend(line[:300] for line in log_errors[:10])
        add("```")
        add("")
    add("## Per minute (HTTP requests)")
    add("")
    add("| minute | requests | p50 ms | p99 ms | RSS MB | PG connections |")
    add("|---:|---:|---:|---:|---:|---|")
    for minute, count, p50, p99, rss, conns in per_minute(stats, result["duration"]):
        warm = " (warm-up)" if minute < args.warmup_minutes else ""
        add(f"| {minute}{warm} | {count} | {p50:.1f} | {p99:.1f} | {rss:.1f} | {conns} |")
    add("")
    path.write_text("\n".join(lines) + "\n")


def plot(path, args, stats, result):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = stats.samples
    minutes = [s["t"] / 60 for s in samples]
    figure, (rss_axis, conn_axis, latency_axis) = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    rss_axis.plot(minutes, [s["rss"] for s in samples], color="tab:blue", label="gateway RSS")
    if "slope" in result:
        warm = args.warmup_minutes
        xs = [m for m in minutes if m >= warm]
        after = [s for s in samples if s["t"] / 60 >= warm]
        if len(after) >= 2:
            mx = statistics.fmean([s["t"] for s in after])
            my = statistics.fmean([s["rss"] for s in after])
            slope = result["slope"] / 3600.0
            rss_axis.plot(xs, [my + slope * (m * 60 - mx) for m in xs], "--", color="tab:red",
                          label=f"fit after warm-up: {result['slope']:+.1f} MB/hour")
    rss_axis.set_ylabel("RSS (MB)")
    rss_axis.legend(loc="lower right")
    conn_axis.step(minutes, [s["connections"] for s in samples], where="post", color="tab:green", label="all")
    conn_axis.step(minutes, [s["gateway_connections"] for s in samples], where="post", color="tab:olive",
                   linestyle=":", label="canopy_gateway")
    conn_axis.set_ylabel("PostgreSQL connections")
    conn_axis.legend(loc="lower right")
    latency_axis.plot(minutes, [s["p50"] for s in samples], color="tab:purple", label="p50")
    latency_axis.plot(minutes, [s["p99"] for s in samples], color="tab:orange", label="p99")
    latency_axis.set_ylabel(f"latency per {SAMPLE_SECONDS:g} s (ms)")
    latency_axis.set_xlabel("minutes")
    latency_axis.legend(loc="upper right")
    for axis in (rss_axis, conn_axis, latency_axis):
        axis.axvspan(0, args.warmup_minutes, color="0.9", zorder=0)
        axis.grid(alpha=0.3)
        axis.set_ylim(bottom=0)
    figure.suptitle(f"Canopy soak: {args.users} users, {result['duration'] / 60:.1f} min "
                    f"(warm-up shaded), {'passed' if result['passed'] else 'FAILED'}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
