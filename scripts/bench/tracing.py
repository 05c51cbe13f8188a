"""Issue 53, part 3: what tracing costs W1 (the lookup of one record).
W1 through `canopy serve` with tracing off (no OTEL_* variables, the
default), on with the parent-based trace-ID ratio sampler at 10 %, and on
with every request sampled; each exporting over OTLP/HTTP to a collector on
loopback that answers without decoding (Server/Tests/python/otlp_receiver.py
--discard). With `--base-binary`, also W1 through a build from before
tracing existed: "off" must cost nothing measurable beside it. Runs
interleaved (every configuration once a round, a gateway started for each),
wrk at --clients; medians. The gateway's CPU a request from /proc."""
import statistics
import subprocess
import sys
import time

from common import ROOT, say
from drivers import run_wrk, wrk_script
from measure import cpu_seconds
from servers import Gateway
from workloads import LOOKUP

HEADING = "## Tracing's cost on W1 (issue 53)"


class Collector:
    """The OTLP/HTTP receiver on loopback, discarding what it gets."""

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, str(ROOT / "Server" / "Tests" / "python" / "otlp_receiver.py"), "--discard"],
                                        stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if '"listening"' not in line:
            sys.exit(f"otlp_receiver.py did not start: {line!r}")
        self.port = int(line.split('"port":')[1].strip(" }\n"))
        return self

    def __exit__(self, *_):
        self.process.kill()
        self.process.wait()


def configurations(collector, base_binary):
    """(name, environment, binary) of each gateway measured."""
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}"}
    rows = []
    if base_binary:
        rows.append(("a build from before tracing (b7c60ae)", {}, base_binary))
    rows += [
        ("tracing off (the default: no OTEL_* variables)", {}, None),
        ("tracing on, 10 % of requests sampled", {**endpoint, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                                                   "OTEL_TRACES_SAMPLER_ARG": "0.1"}, None),
        ("tracing on, every request sampled", {**endpoint, "OTEL_TRACES_SAMPLER": "parentbased_always_on"}, None),
    ]
    return rows


def measure(token, options, base_binary=None):
    """(name, req/s, p50 ms, p99 ms, gateway CPU µs a request), medians of --runs rounds."""
    script = wrk_script(token, LOOKUP)
    with Collector() as collector:
        configs = configurations(collector, base_binary)
        runs = {name: [] for name, _, _ in configs}
        for round_number in range(options.runs):
            for name, environment, binary in configs:
                say(f"tracing, round {round_number + 1} of {options.runs}: {name}")
                with Gateway(environment=environment, binary=binary) as gateway:
                    run_wrk(script, options.clients, 2, {})   # warm: plans, prepared statements, pools
                    before = cpu_seconds(gateway.process)
                    rps, p50, p99 = run_wrk(script, options.clients, options.seconds, {})
                    cpu = (cpu_seconds(gateway.process) - before) / (rps * options.seconds) * 1e6
                    runs[name].append((rps, p50, p99, cpu))
                time.sleep(0.5)
    return [(name, *(statistics.median(run[i] for run in runs[name]) for i in range(4))) for name, _, _ in configs]


def report_lines(rows, options):
    off = next(row for row in rows if row[0].startswith("tracing off"))
    lines = [HEADING, "",
             f"W1 (`lookup` of one record, 5 spans a request when sampled: the request, its field, the plan, the read and its statement) through `canopy serve`, wrk at {options.clients} "
             f"clients, {options.runs} interleaved rounds of {options.seconds} s (a gateway started for each, warmed 2 s); "
             "medians. The collector is `Server/Tests/python/otlp_receiver.py --discard` on loopback, on the same two cores. "
             "Off, a span site costs one task-local read that finds no tracer (`CanopySpan`); the request middleware "
             "is not installed at all.", "",
             "| gateway | requests/s | p50 | p99 | gateway CPU a request | CPU / off |", "|---|---|---|---|---|---|"]
    for name, rps, p50, p99, cpu in rows:
        lines.append(f"| {name} | {rps:,.0f} | {p50:.2f} ms | {p99:.2f} ms | {cpu:.0f} µs | {cpu / off[4]:.2f}× |")
    goals = []
    base = next((row for row in rows if row[0].startswith("a build from before")), None)
    if base:
        goals.append(("tracing off costs nothing measurable: CPU a request within 5 % of the build before tracing",
                      off[4] / base[4], 1.05))
    sampled = next(row for row in rows if row[0].startswith("tracing on, 10"))
    goals.append(("10 % sampling: CPU a request at most 1.25× off", sampled[4] / off[4], 1.25))
    lines += ["", "| goal | measured | |", "|---|---|---|"]
    lines += [f"| {goal} | {ratio:.2f}× | {'met' if ratio <= bound else '**not met**'} |" for goal, ratio, bound in goals] + [""]
    return lines
