"""Issue 69, step 1 (docs/plans/ISSUE_69_SERVE_ON_LOOP.md): the floor
(`canopy-floor`) in each of its serving modes on the same data, W1 and
W2's first page at 8 and at 64 clients, the modes alternating round by
round on this noisy machine (medians of --runs):

- pool: Swift concurrency's pool and one PostgresClient, as `canopy serve`;
- loop (handler): CANOPY_FLOOR_ON_LOOP=1, issue 51's trial: the handler on
  its socket's loop, raw connections per loop (4 each: twice the budget);
- loop (connection), stays: CANOPY_FLOOR_ON_LOOP=2 with
  CANOPY_FLOOR_LOOP_MOVE=0: the whole connection on its socket's loop, a
  PostgresClient per loop at the pool mode's budget;
- loop (connection), moves: CANOPY_FLOOR_ON_LOOP=2: the same, a busy
  loop's statements moved to the other loop.

Requests/s, p50 and p99, CPU µs and context switches a request (the
floor's threads), and for mode 2 how many requests stayed, moved or waited
(`GET /placements`)."""
import json
import os
import statistics
import urllib.request

from common import say
from drivers import run_wrk
from measure import context_switches, cpu_seconds

MODES = [
    ("pool", {}),
    ("loop (handler), issue 51", {"CANOPY_FLOOR_ON_LOOP": "1"}),
    ("loop (connection), stays", {"CANOPY_FLOOR_ON_LOOP": "2", "CANOPY_FLOOR_LOOP_MOVE": "0"}),
    ("loop (connection), moves", {"CANOPY_FLOOR_ON_LOOP": "2"}),
]
CLIENTS = (8, 64)
VARIABLES = ("CANOPY_FLOOR_ON_LOOP", "CANOPY_FLOOR_LOOP_MOVE", "CANOPY_FLOOR_LOOP_POOL", "CANOPY_FLOOR_LOOP_DEPTH")


def placements(floor):
    try:
        return json.load(urllib.request.urlopen(f"http://127.0.0.1:{floor.port}/placements", timeout=5))
    except OSError:
        return None


def one_round(floors, work, options, mode, variables):
    """Each workload at each client count through the floor in one mode:
    {(workload, clients): (req/s, p50, p99, cpu µs, switches)}, and the placements."""
    saved = {name: os.environ.get(name) for name in VARIABLES}
    for name in VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(variables)
    results, placed = {}, {}
    try:
        for name, _unit, _scale, lua, template, _pgbench, _header in work:
            with floors[name] as floor:
                for clients in CLIENTS:
                    cpu_before, switches_before = cpu_seconds(floor.process), context_switches(floor.process)
                    rps, p50, p99 = run_wrk(lua, clients, options.seconds, template, url=floor.url)
                    requests = rps * options.seconds
                    results[(name, clients)] = (rps, p50, p99, (cpu_seconds(floor.process) - cpu_before) / requests * 1e6,
                                                (context_switches(floor.process) - switches_before) / requests)
                    say(f"  {mode}, {name[:2]}, {clients} clients: {rps:,.0f} req/s, p99 {p99:.2f} ms, "
                        f"{results[(name, clients)][3]:.0f} µs, {results[(name, clients)][4]:.1f} switches")
                placed[name] = placements(floor)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return results, placed


def measure(floors, work, options):
    """{mode: {(workload, clients): medians}}, {mode: {workload: placements summed}}."""
    runs = {mode: [] for mode, _ in MODES}
    placed = {mode: {} for mode, _ in MODES}
    for round_number in range(options.runs):
        say(f"floor modes, round {round_number + 1} of {options.runs}")
        order = MODES if round_number % 2 == 0 else list(reversed(MODES))
        for mode, variables in order:
            results, counts = one_round(floors, work, options, mode, variables)
            runs[mode].append(results)
            for name, count in counts.items():
                if count:
                    total = placed[mode].setdefault(name, {})
                    for key, value in count.items():
                        total[key] = total.get(key, 0) + value
    medians = {mode: {key: tuple(statistics.median(r[key][i] for r in results) for i in range(5)) for key in results[0]}
               for mode, results in runs.items()}
    return medians, placed


def report_lines(medians, placed, work, options):
    lines = ["## The floor on the socket's event loop (issue 69, step 1)", "",
             f"`bench.py --only floor-modes`: the floor answering W1 and W2's first page with the gateway's statements, "
             f"in each serving mode (scripts/bench/floor_modes.py), medians of {options.runs} rounds of {options.seconds} s "
             f"a measure, the modes alternating; {options.records:,} records in the zone. CPU and context switches are "
             "the floor's, a request.", ""]
    for name, *_ in work:
        for clients in CLIENTS:
            lines += [f"**{name}, {clients} clients**", "",
                      "| mode | req/s | p50 ms | p99 ms | CPU µs | switches |", "|---|---:|---:|---:|---:|---:|"]
            for mode, _ in MODES:
                rps, p50, p99, cpu, switches = medians[mode][(name, clients)]
                lines.append(f"| {mode} | {rps:,.0f} | {p50:.2f} | {p99:.2f} | {cpu:.0f} | {switches:.1f} |")
            lines.append("")
    moved = [f"{mode}, {name[:2]}: {counts}" for mode, by_name in placed.items() for name, counts in by_name.items()]
    if moved:
        lines += ["Placements in mode 2 (all rounds): " + "; ".join(moved) + ".", ""]
    return lines
