#!/usr/bin/env python3
"""Canopy's benchmark: the gateway against the ceiling PostgreSQL sets.

For each workload, the release gateway is driven over loopback with wrk,
and the very statement the gateway sends for that request (captured from
PostgreSQL's log, parameters included) is run through pgbench with the same
number of clients. Each side runs `--runs` times; the table shows medians of
throughput, p50 and p99, and the ratio gateway / pgbench. Results go to
BENCHMARKS.md.

usage: bench.py [--records N] [--runs R] [--seconds S] [--clients C] [--output FILE]
(make bench: quick; make bench-full: larger). Needs wrk and pgbench.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("CANOPY_BENCH_BINARY", ROOT / ".build" / "release" / "canopy"))
DATA = ROOT / ".bench"
PORT = 18080
URL = f"http://127.0.0.1:{PORT}/graphql"


def say(message):
    print(f"==> {message}", flush=True)


def run(args, **options):
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, **options).stdout


class Cluster:
    """The embedded cluster in .bench, reached with psql as its administrator."""

    def __init__(self):
        out = run([BINARY, "cluster", "start", "--data-dir", DATA])
        match = re.search(r"running on port (\d+), socket in (\S+), log (\S+)", out)
        admin = re.search(r"admin: postgres://([^@]+)@", out)
        if not match or not admin:
            sys.exit(f"cannot read the cluster's address from: {out}")
        self.port, self.socket, self.log = match.group(1), match.group(2).rstrip(","), Path(match.group(3))
        self.user = admin.group(1)

    def psql(self, sql):
        return run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.socket, "-p", self.port,
                    "-U", self.user, "-d", "canopy", "-c", sql]).strip()

    def pgbench_args(self):
        return ["-h", self.socket, "-p", self.port, "-U", self.user, "canopy"]


class Gateway:
    """`canopy serve` (release build) in the background."""

    def __enter__(self):
        log = open(DATA / "serve.log", "a")
        self.process = subprocess.Popen([str(BINARY), "serve", "--data-dir", str(DATA), "--port", str(PORT)],
                                        stdout=log, stderr=subprocess.STDOUT)
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=1)
                return self
            except Exception:
                time.sleep(0.1)
        sys.exit("the gateway did not answer /health")

    def __exit__(self, *_):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)


def graphql(token, query, variables=None):
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(URL, data=body, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(request, timeout=60))
    if answer.get("errors"):
        sys.exit(f"the gateway refused a benchmark request: {answer['errors']}")
    return answer["data"]


def seed(cluster, records):
    """One user, a zone `Bench` of `records` Fasting-like records, loaded
    set-based with triggers off (their columns filled as the triggers would)."""
    user = json.loads(run([BINARY, "users", "add", "bench", "--json", "--data-dir", DATA]))
    user_id = cluster.psql(f"SELECT id FROM canopy.users WHERE record_name = '{user['userRecordName']}'")
    cluster.psql(f"INSERT INTO canopy.zones (owner_id, name) VALUES ({user_id}, 'Bench')")
    zone_id = cluster.psql(f"SELECT id FROM canopy.zones WHERE owner_id = {user_id} AND name = 'Bench'")
    started = time.monotonic()
    cluster.psql(f"""
        SET session_replication_role = replica;
        INSERT INTO canopy.field_types (record_type, field_name, field_type) VALUES
            ('Fast', 'hours', 'INT64'), ('Fast', 'endDate', 'TIMESTAMP'), ('Fast', 'note', 'STRING'), ('Fast', 'tags', 'LIST<STRING>')
            ON CONFLICT DO NOTHING;
        INSERT INTO canopy.records (zone_id, record_name, record_type, fields, change_seq, change_tag,
                                    created_by, modified_by, created_by_name, modified_by_name)
        SELECT {zone_id}, 'r' || g, 'Fast',
               jsonb_build_object('hours', g % 48,
                                  'endDate', jsonb_build_object('type', 'TIMESTAMP', 'value', 1700000000000 + g::bigint * 60000),
                                  'note', 'fast number ' || g, 'tags', jsonb_build_array('t' || (g % 10))),
               s, to_hex(s), {user_id}, {user_id}, '{user['userRecordName']}', '{user['userRecordName']}'
          FROM (SELECT g, nextval('canopy.change_seq') AS s FROM generate_series(1, {records}) g) x;
        ANALYZE canopy.records; ANALYZE canopy.tombstones; ANALYZE canopy.zones;
        """)
    say(f"seeded {records} records in {time.monotonic() - started:.1f} s")
    positions = cluster.psql(f"SELECT min(change_seq) || ' ' || max(change_seq) FROM canopy.records WHERE zone_id = {zone_id}").split()
    return user["token"], int(positions[0]), int(positions[1])


LOOKUP = '{ lookup(scope: PRIVATE, zone: {zoneName: "Bench"}, recordNames: ["r4242"]) { recordName record { recordName fields recordChangeTag } } }'
RECORDS = ('query($a: JSON) { records(scope: PRIVATE, zone: {zoneName: "Bench"}, recordType: "Fast", '
           'filter: "endDate > %@ AND endDate <= %@", args: $a, sort: [{field: "endDate"}], limit: 100) { records { recordName fields } cursor } }')
RECORDS_ARGS = {"a": [{"type": "TIMESTAMP", "value": 1700000000000 + 5000 * 60000},
                      {"type": "TIMESTAMP", "value": 1700000000000 + 900000 * 60000}]}
CHANGES = ('query($since: String) { zoneChanges(scope: PRIVATE, zone: {zoneName: "Bench"}, since: $since, limit: 400) '
           '{ changed { recordName fields recordChangeTag } deleted { recordName } token moreComing } }')


def capture_statements(cluster, token, feed_token):
    """Runs each workload's request once with statement logging on for the
    gateway role and returns, per workload, the SQL and parameters the
    gateway sent (the workload's main statement)."""
    cluster.psql("ALTER ROLE canopy_gateway SET log_min_duration_statement = 0")
    offset = cluster.log.stat().st_size
    with Gateway():
        graphql(token, LOOKUP)
        graphql(token, RECORDS, RECORDS_ARGS)
        graphql(token, CHANGES, {"since": feed_token})
    cluster.psql("ALTER ROLE canopy_gateway RESET log_min_duration_statement")
    text = cluster.log.read_text(errors="replace")[offset:]
    entries = re.split(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", text)
    statements = []
    for index, entry in enumerate(entries):
        match = re.search(r"execute [^:]+: (.*)", entry, re.S)
        if not match:
            continue
        sql = match.group(1).strip()
        parameters = {}
        if index + 1 < len(entries) and "DETAIL:  parameters:" in entries[index + 1]:
            detail = entries[index + 1].split("DETAIL:  parameters:", 1)[1]
            for number, value in re.findall(r"\$(\d+) = (NULL|'(?:[^']|'')*')", detail):
                parameters[int(number)] = None if value == "NULL" else value[1:-1].replace("''", "'")
        statements.append((sql, parameters))
    found = {}
    for name, marker in [("lookup", "unnest("), ("records", "canopy_ord"), ("changes", "floor AS")]:
        matches = [s for s in statements if marker in s[0]]
        if not matches:
            sys.exit(f"the gateway's statement for {name} was not found in {cluster.log}")
        found[name] = matches[-1]
    return found


def pgbench_script(sql, parameters, random_parameter=None):
    """The statement with $n as pgbench variables (-D) and NULLs inlined."""
    defines = []

    def replace(match):
        number = int(match.group(1))
        if number == random_parameter:
            return ":after"
        value = parameters.get(number)
        if value is None:
            return "NULL"
        defines.append(f"p{number}={value}")
        return f":p{number}"

    return re.sub(r"\$(\d+)", replace, sql), defines


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run_pgbench(cluster, script, defines, clients, seconds, header=""):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "script.sql"
        path.write_text(header + script + ";\n")
        arguments = ["pgbench", "-n", "-M", "prepared", "-c", clients, "-j", "2", "-T", seconds,
                     "-f", path, "-l", "--log-prefix", Path(directory) / "log"]
        for define in defines:
            arguments += ["-D", define]
        out = run(arguments + cluster.pgbench_args())
        tps = float(re.search(r"tps = ([\d.]+)", out).group(1))
        latencies = []
        for log in Path(directory).glob("log*"):
            for line in log.read_text().splitlines():
                latencies.append(int(line.split()[2]) / 1000.0)
        return tps, percentile(latencies, 0.5), percentile(latencies, 0.99)


def run_wrk(lua, clients, seconds, environment):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "script.lua"
        path.write_text(lua)
        out = run(["wrk", "-t", "2", "-c", clients, "-d", f"{seconds}s", "--latency", "-s", path, URL],
                  env={**os.environ, **environment})
        if "Non-2xx" in out:
            sys.exit(f"wrk saw errors: {out}")
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

        def latency(label):
            value, unit = re.search(label + r"\s+([\d.]+)(us|ms|s)", out).groups()
            return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

        return rps, latency("50%"), latency("99%")


def wrk_script(token, query, variables=None, token_file=False):
    if not token_file:
        body = json.dumps({"query": query, "variables": variables or {}})
        return (f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
                f'wrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer {token}"\n')
    prefix, suffix = json.dumps({"query": query, "variables": {"since": "TOKEN"}}).split("TOKEN")
    return f"""
local tokens = {{}}
for line in io.lines(os.getenv("CANOPY_BENCH_TOKENS")) do tokens[#tokens + 1] = line end
local headers = {{["Content-Type"] = "application/json", ["Authorization"] = "Bearer {token}"}}
request = function()
  return wrk.format("POST", "/graphql", headers, {json.dumps(prefix)} .. tokens[math.random(#tokens)] .. {json.dumps(suffix)})
end
"""


def notification_latency(token, commits=50):
    """Milliseconds from a commit's HTTP answer to a zoneChanged subscriber's
    `next` (graphql-transport-ws over the `websockets` package), per commit."""
    import asyncio
    import websockets

    async def measure():
        graphql(token, 'mutation { saveZone(zoneName: "Live") { zoneName } }')
        run_id = time.monotonic_ns()
        page = graphql(token, 'query { zoneChanges(scope: PRIVATE, zone: {zoneName: "Live"}) { token } }')
        since = page["zoneChanges"]["token"]
        delays = []
        async with websockets.connect(URL.replace("http://", "ws://"), subprotocols=["graphql-transport-ws"]) as socket:
            await socket.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
            await socket.recv()
            await socket.send(json.dumps({"id": "1", "type": "subscribe", "payload": {
                "query": 'subscription($s: String) { zoneChanged(scope: PRIVATE, zone: {zoneName: "Live"}, since: $s) { token } }',
                "variables": {"s": since}}}))
            loop = asyncio.get_running_loop()
            for index in range(commits):
                save = ('mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "Live"}, save: '
                        f'[{{recordName: "l{run_id}_{index}", recordType: "Note", fields: {{n: {index}}}}}]) {{ saved {{ recordName }} }} }}')
                await loop.run_in_executor(None, graphql, token, save)
                committed = time.monotonic()
                message = json.loads(await asyncio.wait_for(socket.recv(), timeout=10))
                if message.get("type") != "next":
                    sys.exit(f"unexpected subscription message: {message}")
                delays.append((time.monotonic() - committed) * 1000)
        return delays

    return asyncio.run(measure())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"))
    options = parser.parse_args()
    for tool in ("wrk", "pgbench", "psql"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is needed (apt-get install wrk postgresql-client)")
    if not BINARY.exists():
        sys.exit("build first: swift build -c release --product canopy")

    if DATA.exists():
        subprocess.run([str(BINARY), "cluster", "stop", "--data-dir", str(DATA)], capture_output=True)
        shutil.rmtree(DATA)
    DATA.mkdir()
    say("starting a fresh cluster in .bench and migrating")
    cluster = Cluster()
    run([BINARY, "migrate", "up", "--data-dir", DATA])
    token, first_position, last_position = seed(cluster, options.records)

    say("walking the change feed once for tokens at every page")
    tokens = []
    with Gateway():
        since = None
        while True:
            page = graphql(token, CHANGES, {"since": since})["zoneChanges"]
            since = page["token"]
            if not page["moreComing"]:
                break
            tokens.append(since)
    token_file = DATA / "feed-tokens.txt"
    token_file.write_text("\n".join(tokens[:-1]) + "\n")

    say("capturing the statements the gateway sends")
    statements = capture_statements(cluster, token, tokens[len(tokens) // 2])

    workloads = []
    lookup_sql, lookup_parameters = statements["lookup"]
    workloads.append(("W1 lookup of one record", "requests/s", 1,
                      wrk_script(token, LOOKUP), {}, pgbench_script(lookup_sql, lookup_parameters), ""))
    records_sql, records_parameters = statements["records"]
    workloads.append((f"W2 records: date range, sorted, 100 rows of {options.records:,} (first page)", "requests/s", 1,
                      wrk_script(token, RECORDS, RECORDS_ARGS), {}, pgbench_script(records_sql, records_parameters), ""))
    changes_sql, changes_parameters = statements["changes"]
    # The feed position is the parameter the records scan starts after.
    after_parameter = int(re.search(r"r\.change_seq > \$(\d+)::int8", changes_sql).group(1))
    changes_script, changes_defines = pgbench_script(changes_sql, changes_parameters, random_parameter=after_parameter)
    workloads.append(("W4 zoneChanges: 400 changes a request, random positions", "records/s", 400,
                      wrk_script(token, CHANGES, token_file=True), {"CANOPY_BENCH_TOKENS": str(token_file)},
                      (changes_script, changes_defines), f"\\set after random({first_position}, {last_position - 400})\n"))

    rows = []
    with Gateway():
        for name, unit, scale, lua, environment, (script, defines), header in workloads:
            say(f"{name}: {options.runs} runs of {options.seconds} s each side, {options.clients} clients")
            gateway_runs, ceiling_runs = [], []
            for _ in range(options.runs):
                gateway_runs.append(run_wrk(lua, options.clients, options.seconds, environment))
                ceiling_runs.append(run_pgbench(cluster, script, defines, options.clients, options.seconds, header))
            median = lambda runs, i: statistics.median(r[i] for r in runs)
            gateway = [median(gateway_runs, i) for i in range(3)]
            ceiling = [median(ceiling_runs, i) for i in range(3)]
            rows.append((name, unit, gateway[0] * scale, ceiling[0] * scale, gateway[1], ceiling[1], gateway[2], ceiling[2]))
            say(f"  gateway {gateway[0] * scale:,.0f} {unit}, pgbench {ceiling[0] * scale:,.0f} {unit}, ratio {gateway[0] / ceiling[0]:.2f}")

        say(f"subscription latency: {options.runs} runs of 50 commits")
        latency_runs = [notification_latency(token) for _ in range(options.runs)]
        latency = (statistics.median(statistics.median(r) for r in latency_runs),
                   statistics.median(percentile(r, 0.99) for r in latency_runs))
        say(f"  commit to subscriber: p50 {latency[0]:.1f} ms, p99 {latency[1]:.1f} ms")

    cores = os.cpu_count()
    memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    lines = [
        "# Benchmarks", "",
        "Written by `make bench` (`scripts/bench/bench.py`); rerun it to refresh. "
        "Gateway: release build, driven over loopback by `wrk`. Ceiling: the statement the gateway sends for "
        "the same request, captured from PostgreSQL's log with its parameters, run by `pgbench -M prepared` "
        "with the same number of clients against the same cluster. Medians of "
        f"{options.runs} runs of {options.seconds} s per side; {options.clients} clients; latencies in ms.", "",
        f"Machine: {cores} cores, {memory} GiB; PostgreSQL {cluster.psql('SHOW server_version')}; "
        f"{options.records:,} records in the zone; run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
        "| workload | unit | gateway | pgbench | ratio | p50 gateway | p50 pgbench | p99 gateway | p99 pgbench |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, unit, g, c, g50, c50, g99, c99 in rows:
        lines.append(f"| {name} | {unit} | {g:,.0f} | {c:,.0f} | {g / c:.2f} | {g50:.2f} | {c50:.2f} | {g99:.2f} | {c99:.2f} |")
    lines += ["", "Live notifications: from a commit's HTTP answer to the `zoneChanged` subscriber's `next` "
              f"(50 commits a run, medians of {options.runs} runs; issue 5 asks for under 100 ms): "
              f"p50 {latency[0]:.1f} ms, p99 {latency[1]:.1f} ms."]
    notes_path = ROOT / "docs" / "BENCHMARK_NOTES.md"
    lines += ["", f"What the numbers mean and what stands in the way: [docs/BENCHMARK_NOTES.md](docs/BENCHMARK_NOTES.md)."
              if notes_path.exists() else ""]
    Path(options.output).write_text("\n".join(lines).rstrip() + "\n")
    say(f"wrote {options.output}")
    run([BINARY, "cluster", "stop", "--data-dir", DATA])


if __name__ == "__main__":
    main()
