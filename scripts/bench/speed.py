"""Issue 39's sections: W1 and W2 right after loading (cold: no statistics,
autovacuum off), the tail at moderate load in sets of runs, and W11, many
writers each saving into their own zone at once beside pgbench running the
same transactions."""
import json
import statistics
import sys
import time

import common
from common import DATA, run, say
from drivers import run_pgbench, run_wrk, wrk_script
from measure import quiet
from servers import Gateway, graphql
from workloads import LOOKUP, MODIFY_MARKERS, RECORDS_ARGS, batch, lua_batch, modify_pgbench_script, records_query

WRITERS = 64            # W11's users, each with a zone, each one connection
WRITER_BATCH = 50       # records in each W11 request
WRITER_ZONE = "Many"


def cold_start(token, options, label="cold"):
    """W1 and W2's first page through a gateway started now: right after
    loading, before any ANALYZE (autovacuum is off until loading.settle),
    its connections make their generic plans from no statistics; run again
    right after settle, the same way, for the analysed rows beside them.
    Returns {"W1": (req/s, p50, p99), "W2": (…)}, medians of the runs."""
    say(f"{label}: W1 and W2's first page through a gateway started now, {options.runs} runs of {options.seconds} s, "
        f"{options.clients} clients")
    scripts = {"W1": wrk_script(token, LOOKUP), "W2": wrk_script(token, records_query(), RECORDS_ARGS)}
    runs = {name: [] for name in scripts}
    with Gateway():
        for _ in range(options.runs):
            for name, lua in scripts.items():
                runs[name].append(run_wrk(lua, options.clients, options.seconds, {}))
    found = {name: tuple(statistics.median(r[i] for r in results) for i in range(3)) for name, results in runs.items()}
    for name, (rps, p50, p99) in found.items():
        say(f"  {name} {label}: {rps:,.0f} requests/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    return found


def tail_sets(cluster, workloads, first_set, options, sets=3):
    """W1 and W2's first page at `options.clients`, gateway then pgbench,
    in `sets` sets of `options.runs` runs; `first_set` is run_workloads'
    rows (the first set, already run). Returns {"W1": [(p99 gateway, p99
    pgbench, p50 gateway, p50 pgbench) per set], "W2": …}, medians within a set."""
    chosen = {"W1": workloads[0], "W2": workloads[1]}
    found = {name: [(first_set[i][6], first_set[i][7], first_set[i][4], first_set[i][5])]
             for i, name in enumerate(chosen)}
    for number in range(2, sets + 1):
        say(f"tail: set {number} of {sets}, W1 and W2 at {options.clients} clients, {options.runs} runs each side")
        for name, (_, _, _, lua, template, (script, defines), header) in chosen.items():
            gateway_runs, ceiling_runs = [], []
            for _ in range(options.runs):
                gateway_runs.append(run_wrk(lua, options.clients, options.seconds, template))
                ceiling_runs.append(run_pgbench(cluster, script, defines, options.clients, options.seconds, header))
            median = lambda runs, i: statistics.median(r[i] for r in runs)
            found[name].append((median(gateway_runs, 2), median(ceiling_runs, 2),
                                median(gateway_runs, 1), median(ceiling_runs, 1)))
    for name, rows in found.items():
        say(f"  {name} p99 gateway / pgbench by set: {', '.join(f'{g / c:.2f}' for g, c, _, _ in rows)}")
    return found


def add_writers(cluster):
    """W11's users, each with an empty zone `Many` (made through the running
    gateway). Returns [{"token", "id", …}] in id order."""
    say(f"W11: {WRITERS} users, each with a zone {WRITER_ZONE}")
    writers = []
    for number in range(WRITERS):
        user = json.loads(run([common.BINARY, "users", "add", f"writer{number}", "--json", "--data-dir", DATA]))
        user["id"] = int(cluster.psql(f"SELECT id FROM canopy.users WHERE record_name = '{user['userRecordName']}'"))
        graphql(user["token"], f'mutation {{ saveZone(zoneName: "{WRITER_ZONE}") {{ zoneName }} }}')
        writers.append(user)
    return writers


MODIFY_MANY = ('mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "' + WRITER_ZONE + '"}, '
               'save: $s) { saved { recordName recordChangeTag } errors { recordName code } } }')


def capture_request(writers):
    """The request whose statements pgbench runs for W11, as capture_statements takes it."""
    return ("many", writers[0]["token"], MODIFY_MANY, {"s": batch("W3PREFIX", WRITER_BATCH)},
            MODIFY_MARKERS)


def writers_wrk_script(writers):
    """One wrk thread per writer, each with one connection and its own
    token, saving batches of 50 new records named by run, thread and count."""
    head, tail = json.dumps({"query": MODIFY_MANY, "variables": {"s": ["SPLIT"]}}).split('"SPLIT"')
    tokens = ", ".join(json.dumps(w["token"]) for w in writers)
    return f"""
local tokens = {{{tokens}}}
local counter = 0
local run = os.getenv("CANOPY_BENCH_RUN")
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
  thread:set("token", tokens[threads])
end
request = function()
  counter = counter + 1
  local prefix = "m" .. run .. "_" .. counter .. "_"
{lua_batch(WRITER_BATCH)}  local headers = {{["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}}
  return wrk.format("POST", "/graphql", headers, {json.dumps(head)} .. table.concat(parts, ",") .. {json.dumps(tail)})
end
"""


def writer_records(cluster):
    return int(cluster.psql(f"SELECT count(*) FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id "
                            f"WHERE z.name = '{WRITER_ZONE}'"))


def many_writers(cluster, writers, statements, options):
    """W11: the 64 writers at once, each on its own connection into its own
    zone, through the gateway (records counted in the database) and through
    pgbench running the gateway's transaction with 64 clients, client n as
    writer n. Runs interleaved. Returns (gateway records/s, pgbench records/s,
    p50 gateway, p50 pgbench, p99 gateway, p99 pgbench), medians."""
    lua = writers_wrk_script(writers)
    ids = ", ".join(str(w["id"]) for w in writers)
    script, defines, header = modify_pgbench_script(f"' || (ARRAY[{ids}])[:client_id + 1] || '", *statements["many"])
    say(f"W11: {WRITERS} writers, batches of {WRITER_BATCH} into their own zones, {options.runs} runs of "
        f"{options.seconds} s each side")
    gateway_runs, ceiling_runs = [], []
    for _ in range(options.runs):
        before = writer_records(cluster)
        started = time.monotonic()
        _, p50, p99 = run_wrk(lua, WRITERS, options.seconds, {"CANOPY_BENCH_RUN": f"{time.time_ns()}"}, threads=WRITERS)
        for _ in range(120):
            if quiet(cluster):
                break
            time.sleep(0.5)
        saved = writer_records(cluster) - before
        if saved == 0:
            sys.exit("W11: the gateway saved nothing (see .bench/serve.log)")
        gateway_runs.append((saved / (time.monotonic() - started), p50, p99))
        tps, c50, c99 = run_pgbench(cluster, script, defines, WRITERS, options.seconds, header)
        ceiling_runs.append((tps * WRITER_BATCH, c50, c99))
    median = lambda runs, i: statistics.median(r[i] for r in runs)
    row = (median(gateway_runs, 0), median(ceiling_runs, 0), median(gateway_runs, 1), median(ceiling_runs, 1),
           median(gateway_runs, 2), median(ceiling_runs, 2))
    say(f"  gateway {row[0]:,.0f} records/s, pgbench {row[1]:,.0f} records/s, ratio {row[0] / row[1]:.2f}")
    return row
