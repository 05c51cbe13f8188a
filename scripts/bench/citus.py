"""Issue 67's section: W1-W4 through `canopy serve` on a Citus cluster (a
coordinator and two workers, Canopy's tables distributed by
`canopy migrate up --distribute`) beside the same through `canopy serve` on
one PostgreSQL, each engine loaded the same way, through the gateway.

Each engine gets a fresh cluster of its own (.bench-single, .bench-citus),
the benchmark's schema (`canopy schema apply`), one user and their zone
Bench of --citus-records records saved by modifyRecords in batches of 400
(the load's rate is reported too), the zone's change feed walked once for
W4's tokens; then W1 (lookup of one record), W2 (a sorted date-range page of
100), W3 (modifyRecords, 400 new records a request) and W4 (zoneChanges, 400
changes from a random token) are driven with wrk, --runs runs of --seconds
each, 8 clients (W3: one, as 8 batches into one zone queue on its lock, on
Citus past the gateway's statement timeout); the table shows medians.

What it measures: what distribution costs a request on one machine (the
coordinator plans and sends each statement to the worker holding the
owner's shard, a second hop; three PostgreSQL servers share the same cores).
What it cannot measure here: the gain, which comes from workers on machines
of their own (docs/SCALING.md). No pgbench ceiling on Citus: the gateway's
statements there run after `canopy.act_as` in the same transaction, which
pgbench's scripts would have to reproduce; the single node's ceilings are
the main table's.
"""
import json
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import common
import loading
from common import ROOT, run, say
from drivers import run_wrk, wrk_script
from servers import Gateway, graphql
from workloads import BATCH, CHANGES, LOOKUP, MODIFY, RECORDS_ARGS, modify_wrk_script, records_query

ENGINES = [("one PostgreSQL", ROOT / ".bench-single", []),
           ("Citus, 2 workers", ROOT / ".bench-citus", ["--citus", "--workers", "2"])]
SAVE_BENCH = MODIFY.replace('zoneName: "Bulk"', 'zoneName: "Bench"')
WORKLOADS = ["W1 lookup of one record", "W2 records: date range, sorted, 100 rows (first page)",
             "W3 modifyRecords: batches of 400 new records", "W4 zoneChanges: 400 changes a request, random positions"]
# The benchmark's schema (loading.SCHEMA) without the list and searchable
# fields' indexes: on distributed tables `canopy schema apply` refuses them
# (their GIN indexes need Canopy's operator classes, which Citus cannot
# carry to a new index's shards: DECISIONS 187). W1-W4 use neither.
SCHEMA = loading.SCHEMA.replace("LIST<STRING> QUERYABLE", "LIST<STRING>").replace("STRING SEARCHABLE", "STRING")
BEGIN, END = "<!-- citus section: scripts/bench/citus.py -->", "<!-- end of the citus section -->"


def fresh_cluster(data, flags):
    """A new cluster in `data` (Citus with `flags`), migrated, distributed
    on Citus, with the benchmark's schema; its administrator's psql."""
    if data.exists():
        subprocess.run([str(common.BINARY), "cluster", "stop", "--data-dir", str(data)], capture_output=True)
        shutil.rmtree(data)
    data.mkdir()
    out = run([common.BINARY, "cluster", "start", "--data-dir", data] + flags)
    match = re.search(r"running on port (\d+), socket in (\S+),", out)
    admin = re.search(r"admin: postgres://([^@]+)@", out)
    if not match or not admin:
        raise SystemExit(f"cannot read the cluster's address from: {out}")
    psql = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", match.group(2).rstrip(","), "-p", match.group(1),
            "-U", admin.group(1), "-d", "canopy"]
    migrate = [common.BINARY, "migrate", "up", "--data-dir", data, "--migrations-dir", ROOT / "migrations"]
    run(migrate + (["--distribute"] if flags else []))
    schema_file = data / "bench.ckdb"
    schema_file.write_text(SCHEMA)
    run([common.BINARY, "schema", "apply", schema_file, "--data-dir", data, "--migrations-dir", ROOT / "migrations"])
    return lambda sql: run(psql + ["-c", sql]).strip()


def load(token, records):
    """Bench's records saved through the gateway, 400 a request: the
    records saved a second."""
    graphql(token, 'mutation { saveZone(zoneName: "Bench") { zoneName } }')
    graphql(token, 'mutation { saveZone(zoneName: "Bulk") { zoneName } }')
    started = time.monotonic()
    for first in range(0, records, BATCH):
        batch = [{"recordName": f"r{i}", "recordType": "Fast",
                  "fields": {"hours": i % 48, "endDate": {"type": "TIMESTAMP", "value": 1700000000000 + (5001 + i) * 60000},
                             "note": f"fast {i}", "tags": [f"t{i % 10}"]}}
                 for i in range(first, min(records, first + BATCH))]
        errors = graphql(token, SAVE_BENCH, {"s": batch})["modifyRecords"]["errors"]
        if errors:
            raise SystemExit(f"loading Bench: the gateway refused {errors[:3]}")
        if first and first % (BATCH * 25) == 0:
            say(f"  {first:,} of {records:,} records saved")
    return records / (time.monotonic() - started)


def feed_tokens(token):
    """Bench's change feed walked once: its token at every page."""
    tokens, since = [], None
    while True:
        page = graphql(token, CHANGES, {"since": since})["zoneChanges"]
        since = page["token"]
        if not page["moreComing"]:
            return tokens
        tokens.append(since)


def measure_engine(name, data, flags, options):
    """(load rate, {workload: (requests/s, p50 ms, p99 ms) medians}, where
    Bench's shards are) for one engine."""
    say(f"{name}: a fresh cluster in {data}, migrated" + (", distributed" if flags else "") + ", the schema applied")
    psql = fresh_cluster(data, flags)
    owner = json.loads(run([common.BINARY, "users", "add", "bench", "--json", "--data-dir", data]))
    token = owner["token"]
    with Gateway(data=data):
        say(f"{name}: saving {options.citus_records:,} records into Bench through the gateway, {BATCH} a request")
        rate = load(token, options.citus_records)
        say(f"  {rate:,.0f} records/s")
        tokens = feed_tokens(token)
    psql("ANALYZE")
    placement = "on the one server"
    if flags:
        placement = psql("SELECT 'port ' || s.nodeport FROM citus_shards s JOIN canopy.users u ON u.record_name = "
                         f"'{owner['userRecordName']}' WHERE s.table_name = 'canopy.records'::regclass "
                         "AND s.shardid = get_shard_id_for_distribution_column('canopy.records', u.id)")
    token_file = data / "feed-tokens.txt"
    token_file.write_text("\n".join(tokens) + "\n")
    scripts = [(wrk_script(token, LOOKUP), {}),
               (wrk_script(token, records_query(), RECORDS_ARGS), {}),
               (modify_wrk_script(token), None),
               (wrk_script(token, CHANGES, token_file=True), {"CANOPY_BENCH_TOKENS": str(token_file)})]
    results = {}
    with Gateway(data=data):
        for workload, (script, environment) in zip(WORKLOADS, scripts):
            runs = []
            for number in range(options.runs):
                env = environment if environment is not None else {"CANOPY_BENCH_RUN": f"{'c' if flags else 's'}{number}"}
                # W3 by one client: batches into one zone wait for each
                # other's zone lock, and on Citus 8 of them queued past the
                # gateway's statement timeout.
                clients = 1 if workload == WORKLOADS[2] else options.clients
                runs.append(run_wrk(script, clients, options.seconds, env, threads=1 if clients == 1 else 2))
            results[workload] = tuple(statistics.median(column) for column in zip(*runs))
            say(f"{name}: {workload}: {results[workload][0]:,.0f} requests/s, p50 {results[workload][1]:.2f} ms, "
                f"p99 {results[workload][2]:.2f} ms")
    run([common.BINARY, "cluster", "stop", "--data-dir", data])
    return rate, results, placement


def measure(options):
    """Both engines, one after the other: {engine name: measure_engine's}."""
    return {name: measure_engine(name, data, flags, options) for name, data, flags in ENGINES}


def report_lines(measured, options):
    """The section of BENCHMARKS.md, between its markers."""
    (single_name, single), (citus_name, citus) = measured.items()
    units = {WORKLOADS[2]: BATCH, WORKLOADS[3]: 400}
    lines = [BEGIN, "## Canopy on Citus (issue 67)", "",
             f"`canopy serve` on a Citus cluster (a coordinator and two workers, Canopy's tables distributed by "
             f"`canopy migrate up --distribute`) beside `canopy serve` on one PostgreSQL, each loaded alike through the "
             f"gateway: one user's zone of {options.citus_records:,} records. All three Citus servers share this "
             f"machine's cores with the gateway and wrk, so this is what distribution costs a request, not what it "
             f"gains: the gain is workers on machines of their own (docs/SCALING.md). Medians of {options.runs} runs of "
             f"{options.seconds} s, {options.clients} clients (W3: one); latencies in ms; W3 and W4 in records a second "
             f"(requests × 400). The Bench zone's shard group was on the worker at {citus[2]}.", "",
             "| workload | one PostgreSQL | p50 | p99 | Citus | p50 | p99 | Citus / one |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for workload in WORKLOADS:
        unit = units.get(workload, 1)
        s, c = single[1][workload], citus[1][workload]
        lines.append(f"| {workload} | {s[0] * unit:,.0f} | {s[1]:.2f} | {s[2]:.2f} | {c[0] * unit:,.0f} | {c[1]:.2f} | "
                     f"{c[2]:.2f} | {c[0] / s[0]:.2f} |")
    lines.append(f"| loading Bench through the gateway, records/s | {single[0]:,.0f} | | | {citus[0]:,.0f} | | | "
                 f"{citus[0] / single[0]:.2f} |")
    lines += ["", END]
    return lines


def write_section(output, lines):
    """Puts the section in `output` in place of the one there, or at its end."""
    path = Path(output)
    text = path.read_text() if path.exists() else ""
    section = "\n".join(lines)
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)
