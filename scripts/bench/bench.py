#!/usr/bin/env python3
"""Canopy's benchmark: the gateway against the ceiling PostgreSQL sets.

For each workload, the release gateway is driven over loopback with wrk,
and the very statement the gateway sends for that request (captured from
PostgreSQL's log, parameters included) is run through pgbench with the same
number of clients. Each side runs `--runs` times; the table shows medians of
throughput, p50 and p99, and the ratio gateway / pgbench. Results go to
BENCHMARKS.md.

Workloads (issue 7): W1 lookup; W2 a sorted date-range page, first and
50 pages deep; W3 modifyRecords in batches of 400 new records; W4 draining
the change feed; W5 W2 as an accepted participant in SHARED scope; W6 W2
at several table sizes; and the gateway's peak memory and p99 under 64
connections; W2 with a streaming replica (issue 19); what push adds to a
write and a webhook's latency (issue 23). The record type's schema (schema/bench.ckdb's text below) is
applied with `canopy schema apply`, so the declared fields are indexed.

Issue 18 adds the stack's floor: `canopy-floor` (Benchmarks/Floor), a
minimal Hummingbird 2 + PostgresNIO program that answers by running the
statement the gateway sends for W1 (and for W2's first page) with the same
parameters and writing its JSON; it is driven by the same wrk script. The
gateway's and the floor's CPU time per request come from /proc/PID/stat.
It also compares the zone's owner with the guest, a participant of 1,000
shares (--guest-shares), running the same statements through pgbench: the
cost of row-level security as a user's memberships grow.

usage: bench.py [--records N] [--scales N,N,...] [--runs R] [--seconds S] [--clients C] [--guest-shares N] [--output FILE]
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

import population

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("CANOPY_BENCH_BINARY", ROOT / ".build" / "release" / "canopy"))
FLOOR = Path(os.environ.get("CANOPY_BENCH_FLOOR", ROOT / ".build" / "release" / "canopy-floor"))
FLOOR_PORT = 18090
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
        return run(self.psql_args() + ["-c", sql]).strip()

    def psql_args(self):
        return ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.socket, "-p", self.port,
                "-U", self.user, "-d", "canopy"]

    def copy_in(self, sql, data):
        """COPY … FROM STDIN with `data` (text or an iterable of chunks), triggers off."""
        population.copy_in(self.psql_args(), sql, data)

    def pgbench_args(self):
        # As the gateway's role, not the administrator: a superuser bypasses
        # row-level security, and the ceiling must pay for it as the gateway does.
        return ["-h", self.socket, "-p", self.port, "-U", "canopy_gateway", "canopy"]


class Gateway:
    """`canopy serve` (release build) in the background, with `extra` flags."""

    def __init__(self, extra=()):
        self.extra = [str(a) for a in extra]

    def __enter__(self):
        log = open(DATA / "serve.log", "a")
        # A few users drive far past a person's request rate: the limiter
        # stays on the path (its lock and arithmetic are measured) but never
        # refuses.
        self.process = subprocess.Popen([str(BINARY), "serve", "--data-dir", str(DATA), "--port", str(PORT),
                                         "--rate-limit", "1000000000"] + self.extra,
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
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # Keep what explains it, then stop it, so the run's figures are
            # still written (they say the gateway did not stop).
            report = DATA / "gateway-hang.txt"
            with open(report, "w") as out:
                out.write("canopy serve did not stop within 30 s of SIGTERM\n")
                if shutil.which("gdb"):
                    subprocess.run(["gdb", "-p", str(self.process.pid), "-batch", "-ex", "set complaints 0",
                                    "-ex", "thread apply all bt 30"], stdout=out, stderr=subprocess.DEVNULL, timeout=120)
            self.process.kill()
            self.process.wait()
            Gateway.hung = True
            say(f"WARNING: the gateway did not stop within 30 s of SIGTERM; killed it (threads in {report})")

    hung = False


class Floor:
    """`canopy-floor` (release build) running one captured statement."""

    def __init__(self, cluster, name, key, statement, port):
        self.cluster, self.name, self.key, self.port = cluster, name, key, port
        self.sql, parameters = statement
        count = max([int(n) for n in re.findall(r"\$(\d+)", self.sql)] or [0])
        self.parameters = ["NULL" if parameters.get(n) is None else parameters[n] for n in range(1, count + 1)]
        self.url = f"http://127.0.0.1:{port}/graphql"

    def __enter__(self):
        statement = DATA / f"floor-{self.name}.sql"
        statement.write_text(self.sql)
        log = open(DATA / f"floor-{self.name}.log", "a")
        self.process = subprocess.Popen([str(FLOOR), str(self.port), self.cluster.socket, self.cluster.port, str(statement),
                                         self.key] + self.parameters, stdout=log, stderr=subprocess.STDOUT)
        problem = "it did not answer"
        for _ in range(300):
            try:
                request = urllib.request.Request(self.url, data=b"{}", method="POST")
                answer = json.load(urllib.request.urlopen(request, timeout=1))
                if answer["data"][self.key] is not None:
                    return self
                problem = "its statement answered null"
                break
            except OSError:
                time.sleep(0.1)
            except ValueError as error:
                problem = f"it answered something that is not JSON ({error})"
                break
        # Not left running: its port would refuse the next run's floor.
        self.process.terminate()
        self.process.wait(timeout=30)
        sys.exit(f"canopy-floor ({self.name}): {problem}; see {DATA}/floor-{self.name}.log")

    def __exit__(self, *_):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)


def cpu_seconds(process):
    """User + system CPU time a running process has used (/proc/PID/stat)."""
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def graphql(token, query, variables=None):
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(URL, data=body, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(request, timeout=60))
    if answer.get("errors"):
        sys.exit(f"the gateway refused a benchmark request: {answer['errors']}")
    return answer["data"]


def add_user(name, email=None):
    """A user and its bearer token: {"userRecordName", "token", "id"}."""
    arguments = [BINARY, "users", "add", name, "--json", "--data-dir", DATA] + (["--email", email] if email else [])
    return json.loads(run(arguments))


def seed(cluster, user, zone, records):
    """A zone of `records` Fasting-like records owned by `user`, loaded with
    COPY, triggers off (their columns filled as the triggers would).
    Returns the zone's first and last change positions."""
    user_id = cluster.psql(f"SELECT id FROM canopy.users WHERE record_name = '{user['userRecordName']}'")
    cluster.psql(f"INSERT INTO canopy.zones (owner_id, name) VALUES ({user_id}, '{zone}')")
    zone_id = cluster.psql(f"SELECT id FROM canopy.zones WHERE owner_id = {user_id} AND name = '{zone}'")
    started = time.monotonic()
    first = int(cluster.psql("SELECT nextval('canopy.change_seq')")) + 1
    cluster.psql(f"SELECT setval('canopy.change_seq', {first + records})")
    writer = user["userRecordName"]

    def rows():
        lines = []
        for g in range(1, records + 1):
            position = first + g - 1
            lines.append(f"{zone_id}\tr{g}\tFast\t{population.fast_fields(g)}\t{position}\t{position:x}\t"
                         f"{user_id}\t{user_id}\t{writer}\t{writer}\n")
            if len(lines) == 50_000:
                yield "".join(lines)
                lines = []
        yield "".join(lines)

    cluster.copy_in("COPY canopy.records (zone_id, record_name, record_type, fields, change_seq, change_tag, "
                    "created_by, modified_by, created_by_name, modified_by_name) FROM STDIN", rows())
    say(f"seeded {records:,} records in zone {zone} in {time.monotonic() - started:.1f} s")
    positions = cluster.psql(f"SELECT min(change_seq) || ' ' || max(change_seq) FROM canopy.records WHERE zone_id = {zone_id}").split()
    return int(positions[0]), int(positions[1])


# The benchmark's record type, declared as a team would declare it: the
# date range and sort run on endDate's index.
SCHEMA = """
DEFINE SCHEMA
    RECORD TYPE Fast (
        "___recordID" REFERENCE QUERYABLE,
        endDate       TIMESTAMP QUERYABLE SORTABLE,
        hours         INT64 QUERYABLE SORTABLE,
        note          STRING SEARCHABLE,
        tags          LIST<STRING> QUERYABLE
    );
    RECORD TYPE Note (n INT64);
"""


def records_query(zone="Bench", scope="PRIVATE", owner=None):
    owner_name = f', ownerName: "{owner}"' if owner else ""
    return ('query($a: JSON, $c: String) { records(scope: ' + scope + ', zone: {zoneName: "' + zone + '"' + owner_name +
            '}, recordType: "Fast", filter: "endDate > %@ AND endDate <= %@", args: $a, sort: [{field: "endDate"}], '
            'limit: 100, cursor: $c) { records { recordName fields } cursor } }')


def lookup_query(scope="PRIVATE", owner=None):
    owner_name = f', ownerName: "{owner}"' if owner else ""
    return ('{ lookup(scope: ' + scope + ', zone: {zoneName: "Bench"' + owner_name + '}, recordNames: ["r4242"]) '
            '{ recordName record { recordName fields recordChangeTag } } }')


LOOKUP = lookup_query()
RECORDS_ARGS = {"a": [{"type": "TIMESTAMP", "value": 1700000000000 + 5000 * 60000},
                      {"type": "TIMESTAMP", "value": 1700000000000 + 900000000 * 60000}]}
CHANGES = ('query($since: String) { zoneChanges(scope: PRIVATE, zone: {zoneName: "Bench"}, since: $since, limit: 400) '
           '{ changed { recordName fields recordChangeTag } deleted { recordName } token moreComing } }')
MODIFY = ('mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Bulk"}, save: $s) '
          '{ saved { recordName recordChangeTag } errors { recordName code } } }')
BATCH = 400


def batch(prefix):
    """W3's 400 new records, named prefix0 … prefix399."""
    return [{"recordName": f"{prefix}{i}", "recordType": "Fast",
             "fields": {"hours": i % 48, "endDate": {"type": "TIMESTAMP", "value": 1800000000000 + i * 60000},
                        "note": f"bulk {i}", "tags": [f"t{i % 10}"]}} for i in range(BATCH)]


def capture_statements(cluster, requests):
    """Runs each (name, token, query, variables, markers) request once with
    statement logging on for the gateway role and returns, per name, the
    statements (SQL, parameters) the gateway sent for it that contain each
    marker, in order."""
    cluster.psql("ALTER ROLE canopy_gateway SET log_min_duration_statement = 0")
    found = {}
    with Gateway():
        for name, token, query, variables, markers in requests:
            offset = cluster.log.stat().st_size
            graphql(token, query, variables)
            time.sleep(0.2)
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
            found[name] = []
            for marker in markers:
                matches = [statement for statement in statements if marker in statement[0]]
                if not matches:
                    sys.exit(f"the gateway's statement for {name} ({marker}) was not found in {cluster.log}")
                found[name].append(matches[-1])
    cluster.psql("ALTER ROLE canopy_gateway RESET log_min_duration_statement")
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


def batch_insert_ms(cluster, zone_id, user_id, before="", runs=15):
    """Median milliseconds of one INSERT of 400 new records (W3's batch, as
    the gateway role) in a transaction rolled back; `before` runs first in
    it as the administrator (dropping an index, turning triggers off)."""
    script = f"""
        BEGIN;
        {before}
        SET LOCAL ROLE canopy_gateway;
        SELECT set_config('canopy.user_id', '{user_id}', true) \\g /dev/null
        \\timing on
        INSERT INTO canopy.records (zone_id, record_name, record_type, fields)
        SELECT {zone_id}, 'cost' || g || '_' || md5(random()::text), 'Fast',
               jsonb_build_object('hours', g % 48, 'endDate', jsonb_build_object('type', 'TIMESTAMP', 'value', 1800000000000 + g * 60000),
                                  'note', 'bulk ' || g, 'tags', jsonb_build_array('t' || (g % 10)))
          FROM generate_series(1, {BATCH}) g;
        \\timing off
        ROLLBACK;
        """
    times = []
    for _ in range(runs):
        out = subprocess.run(cluster.psql_args(), input=script, capture_output=True, text=True, check=True).stdout
        times.append(float(re.findall(r"Time: ([\d.]+) ms", out)[-1]))
    return statistics.median(times)


def index_costs(cluster, zone_id, user_id):
    """What a W3 batch pays for: the INSERT as it is, without each declared
    index in turn, without all of them, and with triggers off too."""
    declared = cluster.psql("SELECT string_agg(index_name || ' ' || record_type || '.' || field_name || ' ' || kind, ',' "
                            "ORDER BY field_name) FROM canopy.schema_indexes").split(",")
    whole = batch_insert_ms(cluster, zone_id, user_id)
    rows = [("the batch as saved (every index, every trigger)", whole)]
    for entry in declared:
        name, field, kind = entry.split(" ")
        rows.append((f"without {field}'s index ({kind})", batch_insert_ms(cluster, zone_id, user_id, f"DROP INDEX canopy.{name};")))
    drop_all = "DROP INDEX " + ", ".join("canopy." + entry.split(" ")[0] for entry in declared) + ";"
    rows.append(("without any declared index", batch_insert_ms(cluster, zone_id, user_id, drop_all)))
    rows.append(("without any declared index, triggers and foreign keys off",
                 batch_insert_ms(cluster, zone_id, user_id, drop_all + " SET LOCAL session_replication_role = replica;")))
    return rows


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


def run_wrk(lua, clients, seconds, environment, url=URL):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "script.lua"
        path.write_text(lua)
        out = run(["wrk", "-t", "2", "-c", clients, "-d", f"{seconds}s", "--timeout", "60s", "--latency", "-s", path, url],
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


def push_latency(token, commits=20):
    """Issue 23: what push adds to a write, and how soon a webhook hears.

    A webhook receiver (http.server on loopback, answering 204) stands in
    for the device. Each commit saves one record in its own zone; the same
    loop runs first with no push subscription (a write then only probes
    `push_covered`) and then with a DATABASE subscription and a webhook
    device (the write also inserts an outbox row and NOTIFYs). Commits are
    spaced 1.1 s apart in both loops, past the device's one-push-a-second
    gap, so no notification waits on coalescing. Returns the save
    latencies (ms) without and with the subscriber, and the milliseconds
    from each commit's HTTP answer to the webhook's arrival."""
    import http.server
    import queue
    import threading

    arrivals = queue.Queue()

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            arrivals.put(time.monotonic())
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    run_id = time.monotonic_ns()
    graphql(token, 'mutation { saveZone(zoneName: "Pushed") { zoneName } }')

    def save(index):
        started = time.monotonic()
        graphql(token, 'mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "Pushed"}, save: '
                       f'[{{recordName: "p{run_id}_{index}", recordType: "Note", fields: {{n: {index}}}}}]) '
                       '{ saved { recordName } } }')
        answered = time.monotonic()
        return answered, (answered - started) * 1000

    try:
        without = []
        for index in range(commits):
            without.append(save(index)[1])
            time.sleep(1.1)
        device = graphql(token, 'mutation($u: String!) { registerDevice(kind: WEBHOOK, url: $u) { deviceID } }',
                         {"u": f"http://127.0.0.1:{server.server_address[1]}/hook/bench"})["registerDevice"]["deviceID"]
        graphql(token, 'mutation { saveSubscription(subscriptionID: "bench", kind: DATABASE) { subscriptionID } }')
        with_push, delays = [], []
        for index in range(commits, 2 * commits):
            answered, milliseconds = save(index)
            with_push.append(milliseconds)
            try:
                arrived = arrivals.get(timeout=15)
            except queue.Empty:
                sys.exit("push: no webhook arrived within 15 s of a commit (see .bench/serve.log)")
            delays.append((arrived - answered) * 1000)
            time.sleep(1.1)
        graphql(token, 'mutation { deleteSubscription(subscriptionID: "bench") }')
        graphql(token, 'mutation($d: String!) { unregisterDevice(deviceID: $d) }', {"d": device})
    finally:
        server.shutdown()
    return without, with_push, delays


def modify_wrk_script(token):
    """W3: each request saves 400 new records, named by run, thread and count."""
    head, tail = json.dumps({"query": MODIFY, "variables": {"s": ["SPLIT"]}}).split('"SPLIT"')
    return f"""
local counter = 0
local run = os.getenv("CANOPY_BENCH_RUN")
local headers = {{["Content-Type"] = "application/json", ["Authorization"] = "Bearer {token}"}}
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
request = function()
  counter = counter + 1
  local prefix = "w" .. run .. "_" .. tid .. "_" .. counter .. "_"
  local parts = {{}}
  for i = 0, {BATCH - 1} do
    parts[#parts + 1] = '{{"recordName":"' .. prefix .. i .. '","recordType":"Fast","fields":{{"hours":' .. (i % 48) ..
      ',"endDate":{{"type":"TIMESTAMP","value":' .. string.format("%.0f", 1800000000000 + i * 60000) ..
      '}},"note":"bulk ' .. i .. '","tags":["t' .. (i % 10) .. '"]}}}}'
  end
  return wrk.format("POST", "/graphql", headers, {json.dumps(head)} .. table.concat(parts, ",") .. {json.dumps(tail)})
end
"""


def modify_pgbench_script(user_id, write, read):
    """W3's ceiling: the transaction the gateway runs for a batch (identity,
    the write, the read-back of what was saved), with the batch's names made
    unique per transaction and the read-back's ids taken from the write's
    answer (pgbench's \\gset), as the gateway takes them."""
    write_sql, write_parameters = write
    saves = next(number for number, value in write_parameters.items() if value and "W3PREFIX" in value)
    script, defines = pgbench_script(write_sql, write_parameters)
    script = script.replace(f":p{saves}::text", f"replace(:p{saves}::text, 'W3PREFIX', 'c' || :client_id || '_' || :uniq || '_')")
    read_sql, read_parameters = read
    ids = next(number for number, value in read_parameters.items() if value and value.startswith("{") and value[1:2].isdigit())
    read_parameters = {number: value for number, value in read_parameters.items() if number != ids}
    read_script, read_defines = pgbench_script(read_sql, read_parameters)
    read_script = read_script.replace(f"NULL::int8[]", "ARRAY(SELECT jsonb_array_elements_text((:w_result)::jsonb -> 'saved')::int8)")
    read_defines = [d.replace("p", "q", 1) for d in read_defines]
    read_script = re.sub(r":p(\d+)", r":q\1", read_script)
    header = "\\set uniq random(1, 2000000000)\n"
    body = (f"BEGIN;\nSELECT set_config('canopy.user_id', '{user_id}', true), set_config('canopy.schema_mode', 'development', true);\n"
            f"SELECT * FROM ({script}) w(found, result) \\gset w_\n{read_script};\nCOMMIT")
    return body, defines + read_defines, header


def saved_batch_records(cluster):
    """Records W3's gateway runs have saved so far."""
    return int(cluster.psql("SELECT count(*) FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id "
                            "WHERE z.name = 'Bulk' AND r.record_name LIKE 'w%'"))


def quiet(cluster):
    """No gateway statement is running (the last W3 batches have finished)."""
    return cluster.psql("SELECT count(*) FROM pg_stat_activity WHERE usename = 'canopy_gateway' "
                        "AND state = 'active' AND query LIKE '%modify_records%'") == "0"


def peak_memory_mb(process):
    """The gateway's peak resident memory (VmHWM), in MB."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


def replica_comparison(cluster, lua, options):
    """W2's first page through a gateway without and with a streaming replica
    of the cluster; per-server transactions from each one's pg_stat_database."""
    say("W2 with a streaming replica: making one (canopy cluster replica r1)")
    out = run([BINARY, "cluster", "replica", "r1", "--data-dir", DATA])
    place = re.search(r"running on port (\d+), socket in (\S+),", out)
    url = re.search(r"read-only admin: (\S+)", out)
    if not place or not url:
        sys.exit(f"cannot read the replica's address from: {out}")
    replica_psql = ["psql", "-X", "-q", "-At", "-h", place.group(2), "-p", place.group(1), "-U", cluster.user, "-d", "canopy"]
    count = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"

    def commits():
        time.sleep(1.5)   # backends report their counts about once a second
        return int(cluster.psql(count)), int(run(replica_psql + ["-c", count]).strip())

    rows = []
    for label, extra in (("primary alone", []), ("primary + 1 replica (--replica-url)", ["--replica-url", url.group(1)])):
        with Gateway(extra):
            time.sleep(1)   # the replica comes into rotation at the first sample
            runs = []
            for _ in range(options.runs):
                primary_before, replica_before = commits()
                started = time.monotonic()
                throughput, p50, p99 = run_wrk(lua, options.clients, options.seconds, {})
                elapsed = time.monotonic() - started
                primary_after, replica_after = commits()
                runs.append((throughput, p50, p99, (primary_after - primary_before) / elapsed,
                             (replica_after - replica_before) / elapsed))
        row = (label,) + tuple(statistics.median(r[i] for r in runs) for i in range(5))
        rows.append(row)
        say(f"  {label}: {row[1]:,.0f} requests/s, p50 {row[2]:.2f} ms; primary {row[4]:,.0f} tps, replica {row[5]:,.0f} tps")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--scales", default="20000,200000", help="W6's table sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--owners", type=int, default=1000, help="the background population's owners")
    parser.add_argument("--population", type=int, default=None,
                        help="records in the population's zones (default: half of --records)")
    parser.add_argument("--guest-shares", type=int, default=1000,
                        help="shares of the population the guest (W5, the membership comparison) accepted")
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"))
    options = parser.parse_args()
    scales = [int(n) for n in options.scales.split(",") if n]
    for tool in ("wrk", "pgbench", "psql"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is needed (apt-get install wrk postgresql-client)")
    if not BINARY.exists() or not FLOOR.exists():
        sys.exit("build first: swift build -c release --product canopy && swift build -c release --product canopy-floor")

    if DATA.exists():
        subprocess.run([str(BINARY), "cluster", "stop", "--data-dir", str(DATA)], capture_output=True)
        shutil.rmtree(DATA)
    DATA.mkdir()
    say("starting a fresh cluster in .bench and migrating")
    cluster = Cluster()
    run([BINARY, "migrate", "up", "--data-dir", DATA, "--migrations-dir", ROOT / "migrations"])
    owner = add_user("bench")
    guest = add_user("guest", email="guest@example.com")
    owner_id = cluster.psql(f"SELECT id FROM canopy.users WHERE record_name = '{owner['userRecordName']}'")
    guest_id = cluster.psql(f"SELECT id FROM canopy.users WHERE record_name = '{guest['userRecordName']}'")
    population_records = options.population if options.population is not None else options.records // 2
    say(f"loading the population: {options.owners:,} owners, {population_records:,} records in zones of skewed sizes, "
        "shares and participants")
    people = population.seed_population(cluster.psql, cluster.copy_in, options.owners, population_records)
    # The benchmark's users are members of other people's shares too, so
    # their row-level security walks realistic lists of shares.
    population.join_shares(cluster.psql, guest_id, options.guest_shares)
    population.join_shares(cluster.psql, owner_id, 20, seed=23)
    say(f"  {people['zones']:,} zones (largest {people['largest_zone']:,} records), {people['zone_shares']} zone-wide and "
        f"{people['record_shares']} record-hierarchy shares, {people['participants']:,} participants, in {people['seconds']:.1f} s")
    first_position, last_position = seed(cluster, owner, "Bench", options.records)
    scale_zones = {}
    for scale in scales:
        scale_zones[scale] = "Bench" if scale == options.records else f"S{scale}"
        if scale != options.records:
            seed(cluster, owner, scale_zones[scale], scale)
    schema_file = DATA / "bench.ckdb"
    schema_file.write_text(SCHEMA)
    started = time.monotonic()
    say("canopy schema apply: declaring Fast's fields and building their indexes")
    run([BINARY, "schema", "apply", schema_file, "--data-dir", DATA, "--migrations-dir", ROOT / "migrations"])
    cluster.psql("ANALYZE canopy.records; ANALYZE canopy.tombstones; ANALYZE canopy.zones;")
    say(f"  done in {time.monotonic() - started:.1f} s")
    token = owner["token"]

    say("sharing Bench with a READ_ONLY participant; walking the change feed once for tokens at every page; "
        "a cursor 50 pages deep")
    tokens = []
    with Gateway():
        share = graphql(token, 'mutation { saveShare(zoneName: "Bench", participants: [{email: "guest@example.com", '
                               'permission: READ_ONLY}]) { url } }')["saveShare"]
        graphql(guest["token"], 'mutation($u: String!) { acceptShare(url: $u) { status } }', {"u": share["url"]})
        graphql(token, 'mutation { saveZone(zoneName: "Bulk") { zoneName } }')
        since = None
        while True:
            page = graphql(token, CHANGES, {"since": since})["zoneChanges"]
            since = page["token"]
            if not page["moreComing"]:
                break
            tokens.append(since)
        cursor = None
        for _ in range(50):
            cursor = graphql(token, records_query(), {**RECORDS_ARGS, "c": cursor})["records"]["cursor"]
    token_file = DATA / "feed-tokens.txt"
    token_file.write_text("\n".join(tokens[:-1]) + "\n")
    deep_args = {**RECORDS_ARGS, "c": cursor}
    shared_query = records_query(scope="SHARED", owner=owner["userRecordName"])

    guest_shares = int(cluster.psql(f"SELECT count(*) FROM canopy.memberships WHERE user_id = {guest_id} "
                                    "AND share_id IS NOT NULL"))
    say("capturing the statements the gateway sends")
    requests = [
        ("lookup", token, LOOKUP, {}, ["unnest("]),
        ("records", token, records_query(), RECORDS_ARGS, ["canopy_ord"]),
        ("deep", token, records_query(), deep_args, ["canopy_ord"]),
        ("shared", guest["token"], shared_query, RECORDS_ARGS, ["canopy_ord"]),
        ("shared lookup", guest["token"], lookup_query(scope="SHARED", owner=owner["userRecordName"]), {}, ["unnest("]),
        ("changes", token, CHANGES, {"since": tokens[len(tokens) // 2]}, ["floor AS"]),
        ("modify", token, MODIFY, {"s": batch("W3PREFIX")}, ["canopy.modify_records(", "r.id = ANY("]),
    ] + [(f"scale{scale}", token, records_query(zone), RECORDS_ARGS, ["canopy_ord"]) for scale, zone in scale_zones.items()]
    statements = capture_statements(cluster, requests)

    def reader(name):
        sql, parameters = statements[name][0]
        return pgbench_script(sql, parameters), ""

    workloads = [
        ("W1 lookup of one record", "requests/s", 1, wrk_script(token, LOOKUP), {}) + reader("lookup"),
        (f"W2 records: date range, sorted, 100 rows of {options.records:,} (first page)", "requests/s", 1,
         wrk_script(token, records_query(), RECORDS_ARGS), {}) + reader("records"),
        ("W2 records: the same, 50 pages deep (cursor)", "requests/s", 1, wrk_script(token, records_query(), deep_args), {}) + reader("deep"),
    ]
    write_script, write_defines, write_header = modify_pgbench_script(owner_id, *statements["modify"])
    workloads.append((f"W3 modifyRecords: batches of {BATCH} new records", "records/s", BATCH, modify_wrk_script(token),
                      {"CANOPY_BENCH_RUN": "RUN"}, (write_script, write_defines), write_header))
    changes_sql, changes_parameters = statements["changes"][0]
    # The feed position is the parameter the records scan starts after.
    after_parameter = int(re.search(r"r\.change_seq > \$(\d+)::int8", changes_sql).group(1))
    changes_script, changes_defines = pgbench_script(changes_sql, changes_parameters, random_parameter=after_parameter)
    workloads.append(("W4 zoneChanges: 400 changes a request, random positions", "records/s", 400,
                      wrk_script(token, CHANGES, token_file=True), {"CANOPY_BENCH_TOKENS": str(token_file)},
                      (changes_script, changes_defines), f"\\set after random({first_position}, {last_position - 400})\n"))
    workloads.append(("W5 the W2 first page as an accepted READ_ONLY participant (SHARED)", "requests/s", 1,
                      wrk_script(guest["token"], shared_query, RECORDS_ARGS), {}) + reader("shared"))
    for scale, zone in scale_zones.items():
        workloads.append((f"W6 the W2 first page, zone of {scale:,} records", "requests/s", 1,
                          wrk_script(token, records_query(zone), RECORDS_ARGS), {}) + reader(f"scale{scale}"))

    # The floor answers W1 and W2's first page with the gateway's own statements.
    floors = {workloads[0][0]: Floor(cluster, "lookup", "lookup", statements["lookup"][0], FLOOR_PORT),
              workloads[1][0]: Floor(cluster, "records", "records", statements["records"][0], FLOOR_PORT + 1)}
    floor_rows = []
    rows = []
    with Gateway() as gateway, floors[workloads[0][0]], floors[workloads[1][0]]:
        for name, unit, scale, lua, template, (script, defines), header in workloads:
            say(f"{name}: {options.runs} runs of {options.seconds} s each side, {options.clients} clients")
            gateway_runs, ceiling_runs, floor_runs, gateway_cpu_runs, floor_cpu_runs = [], [], [], [], []
            for run_number in range(options.runs):
                # A fresh run id each run (W3's record names): reusing one made
                # every later run's names collide with the first's, so those
                # runs saved nothing (each record a conflict) and W3 read 164/s.
                environment = {key: (f"{time.time_ns()}" if value == "RUN" else value) for key, value in template.items()}
                if "CANOPY_BENCH_RUN" in environment:
                    # W3: count what was saved, not what wrk saw answered (a
                    # run's last requests finish after wrk stops counting).
                    before = saved_batch_records(cluster)
                    started = time.monotonic()
                    answered, p50, p99 = run_wrk(lua, options.clients, options.seconds, environment)
                    for _ in range(120):
                        if quiet(cluster):
                            break
                        time.sleep(0.5)
                    saved = saved_batch_records(cluster) - before
                    # Every batch wrk saw answered must have been saved: a
                    # batch refused record by record still answers 200.
                    if saved < answered * options.seconds * scale * 0.95:
                        sys.exit(f"W3: wrk saw about {answered * options.seconds:.0f} batches answered but only "
                                 f"{saved} records were saved; the gateway refused records (see its answers)")
                    gateway_runs.append((saved / scale / (time.monotonic() - started), p50, p99))
                else:
                    cpu_before = cpu_seconds(gateway.process)
                    gateway_runs.append(run_wrk(lua, options.clients, options.seconds, environment))
                    gateway_cpu_runs.append((cpu_seconds(gateway.process) - cpu_before) / (gateway_runs[-1][0] * options.seconds))
                ceiling_runs.append(run_pgbench(cluster, script, defines, options.clients, options.seconds, header))
                if name in floors:
                    floor = floors[name]
                    cpu_before = cpu_seconds(floor.process)
                    floor_runs.append(run_wrk(lua, options.clients, options.seconds, environment, url=floor.url))
                    floor_cpu_runs.append((cpu_seconds(floor.process) - cpu_before) / (floor_runs[-1][0] * options.seconds))
            median = lambda runs, i: statistics.median(r[i] for r in runs)
            if name in floors:
                floor_median = [median(floor_runs, i) for i in range(3)]
                floor_rows.append((name, median(gateway_runs, 0), floor_median[0], median(ceiling_runs, 0),
                                   statistics.median(gateway_cpu_runs) * 1e6, statistics.median(floor_cpu_runs) * 1e6,
                                   median(gateway_runs, 1), floor_median[1]))
                say(f"  floor {floor_median[0]:,.0f} {unit}; gateway / floor {floor_rows[-1][1] / floor_median[0]:.2f}; "
                    f"CPU per request: gateway {floor_rows[-1][4]:.0f} µs, floor {floor_rows[-1][5]:.0f} µs")
            gateway_median = [median(gateway_runs, i) for i in range(3)]
            ceiling = [median(ceiling_runs, i) for i in range(3)]
            rows.append((name, unit, gateway_median[0] * scale, ceiling[0] * scale, gateway_median[1], ceiling[1], gateway_median[2], ceiling[2]))
            say(f"  gateway {gateway_median[0] * scale:,.0f} {unit}, pgbench {ceiling[0] * scale:,.0f} {unit}, "
                f"ratio {gateway_median[0] / ceiling[0]:.2f}")
        saved = saved_batch_records(cluster)

        say(f"W2 first page under 64 connections: {options.runs} runs of {options.seconds} s")
        wide_runs = [run_wrk(workloads[1][3], 64, options.seconds, {}) for _ in range(options.runs)]
        wide = (statistics.median(r[0] for r in wide_runs), statistics.median(r[1] for r in wide_runs),
                statistics.median(r[2] for r in wide_runs))
        memory = peak_memory_mb(gateway.process)
        tails = [r[2] / r[1] for r in wide_runs]
        # The same load on the floor and on PostgreSQL alone: what the stack
        # and the machine do to the tail without the gateway's own work.
        floor_wide = [run_wrk(workloads[1][3], 64, options.seconds, {}, url=floors[workloads[1][0]].url)
                      for _ in range(options.runs)]
        records_script, records_defines = reader("records")[0]
        pgbench_wide = [run_pgbench(cluster, records_script, records_defines, 64, options.seconds)
                        for _ in range(options.runs)]
        floor_tails = [r[2] / r[1] for r in floor_wide]
        pgbench_tails = [r[2] / r[1] for r in pgbench_wide]
        say(f"  the floor at 64: p99 / p50 by run {', '.join(f'{t:.2f}' for t in floor_tails)}; "
            f"pgbench at 64: {', '.join(f'{t:.2f}' for t in pgbench_tails)}")
        say(f"  {wide[0]:,.0f} requests/s, p50 {wide[1]:.2f} ms, p99 {wide[2]:.2f} ms; p99 / p50 by run: "
            f"{', '.join(f'{t:.2f}' for t in tails)}; gateway peak RSS {memory:.0f} MB")

        say(f"row-level security and memberships: the owner and the guest (accepted {guest_shares} shares), "
            f"pgbench, {options.runs} runs of {options.seconds} s each")
        membership_rows = []
        for label, owner_statement, guest_statement in (("one record (W1's lookup)", "lookup", "shared lookup"),
                                                        ("W2's first page", "records", "shared")):
            sides = []
            for statement in (owner_statement, guest_statement):
                script, defines = reader(statement)[0]
                runs = [run_pgbench(cluster, script, defines, options.clients, options.seconds) for _ in range(options.runs)]
                sides.append((statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)))
            membership_rows.append((label, *sides[0], *sides[1]))
            say(f"  {label}: owner {sides[0][0]:,.0f} tps, guest {sides[1][0]:,.0f} tps, "
                f"owner / guest {sides[0][0] / sides[1][0]:.2f}")

        say(f"what a batch of {BATCH} saves pays for: the INSERT with and without each declared index (15 runs each)")
        bulk_zone = cluster.psql(f"SELECT id FROM canopy.zones WHERE owner_id = {owner_id} AND name = 'Bulk'")
        cost_rows = index_costs(cluster, bulk_zone, owner_id)
        for label, ms in cost_rows:
            say(f"  {label}: {ms:.1f} ms")

        say(f"subscription latency: {options.runs} runs of 50 commits")
        latency_runs = [notification_latency(token) for _ in range(options.runs)]
        latency = (statistics.median(statistics.median(r) for r in latency_runs),
                   statistics.median(percentile(r, 0.99) for r in latency_runs))
        say(f"  commit to subscriber: p50 {latency[0]:.1f} ms, p99 {latency[1]:.1f} ms")

        say(f"push: {options.runs} runs of 20 single-record saves without, then with, a DATABASE subscription "
            "and a webhook device (commits 1.1 s apart)")
        push_runs = [push_latency(token) for _ in range(options.runs)]
        push = {"without": statistics.median(statistics.median(r[0]) for r in push_runs),
                "with": statistics.median(statistics.median(r[1]) for r in push_runs),
                "p50": statistics.median(statistics.median(r[2]) for r in push_runs),
                "p99": statistics.median(percentile(r[2], 0.99) for r in push_runs)}
        say(f"  save p50 {push['without']:.2f} ms without a subscriber, {push['with']:.2f} ms with one; "
            f"commit to webhook p50 {push['p50']:.1f} ms, p99 {push['p99']:.1f} ms")

    replica_rows = replica_comparison(cluster, workloads[1][3], options)

    by_name = {row[0]: row for row in rows}
    first = rows[1]
    deep = rows[2]
    owner_row = rows[1]
    participant = next(row for row in rows if row[0].startswith("W5"))
    scale_rows = [row for row in rows if row[0].startswith("W6")]
    cores = os.cpu_count()
    total_memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    lines = [
        "# Benchmarks", "",
        "Written by `make bench` (`scripts/bench/bench.py`); rerun it to refresh. "
        "Gateway: release build, driven over loopback by `wrk`. Ceiling: the statements the gateway sends for "
        "the same request, captured from PostgreSQL's log with their parameters, run by `pgbench -M prepared` "
        "as `canopy_gateway` (so row-level security applies to it too) "
        "with the same number of clients against the same cluster. Medians of "
        f"{options.runs} runs of {options.seconds} s per side; {options.clients} clients; latencies in ms. "
        "The record type's fields are declared with `canopy schema apply` (QUERYABLE/SORTABLE endDate), so "
        "the date range and sort run on its index.", "",
        f"Machine: {cores} cores, {total_memory} GiB; PostgreSQL {cluster.psql('SHOW server_version')}; "
        f"{options.records:,} records in the zone; run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
        f"Around it, the population (`scripts/bench/population.py`, loaded with COPY): {people['owners']:,} owners, "
        f"{people['zones']:,} zones of skewed sizes holding {people['records']:,} records (largest {people['largest_zone']:,}), "
        f"{people['zone_shares']} zone-wide and {people['record_shares']} record-hierarchy shares, "
        f"{people['participants']:,} participants of every role and status; the benchmark's owner is an accepted "
        f"participant in 20 of those shares and its guest in {guest_shares - 1:,} (and in the owner's Bench share).", "",
        "| workload | unit | gateway | pgbench | ratio | p50 gateway | p50 pgbench | p99 gateway | p99 pgbench |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, unit, g, c, g50, c50, g99, c99 in rows:
        lines.append(f"| {name} | {unit} | {g:,.0f} | {c:,.0f} | {g / c:.2f} | {g50:.2f} | {c50:.2f} | {g99:.2f} | {c99:.2f} |")

    lines += [
        "", "## The stack's floor and the gateway's CPU (issue 18)", "",
        "The floor is `canopy-floor` (Benchmarks/Floor): Hummingbird 2 and PostgresNIO, release build, answering by "
        "running the statement the gateway sends for the workload (captured above, parameters included) and writing "
        "its JSON; no GraphQL, authentication, logs or metrics. Same wrk script and clients. CPU per request is the "
        "process's user + system time over a run divided by the requests answered (/proc/PID/stat), median of the runs.", "",
        "| workload | gateway req/s | floor req/s | pgbench tps | gateway / floor | gateway CPU µs/request | floor CPU µs/request | p50 gateway | p50 floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, g, f, c, gcpu, fcpu, g50, f50 in floor_rows:
        lines.append(f"| {name} | {g:,.0f} | {f:,.0f} | {c:,.0f} | {g / f:.2f} | {gcpu:.0f} | {fcpu:.0f} | {g50:.2f} | {f50:.2f} |")

    lines += [
        "", "## Row-level security and memberships (issue 18)", "",
        f"The same statement shape run by pgbench as `canopy_gateway` for the zone's owner (PRIVATE scope) and for "
        f"the guest, an accepted READ_ONLY participant of the zone's share and of {guest_shares - 1:,} other shares "
        "(SHARED scope); the statements are the gateway's own, captured above. Medians of the runs.", "",
        "| read | owner tps | guest tps | guest cost / owner's | owner p50 | guest p50 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, owner_tps, owner_p50, guest_tps, guest_p50 in membership_rows:
        lines.append(f"| {label} | {owner_tps:,.0f} | {guest_tps:,.0f} | {owner_tps / guest_tps:.2f}× | "
                     f"{owner_p50:.3f} | {guest_p50:.3f} |")

    lines += [
        "", f"## What a batch of {BATCH} saves pays for (issue 18)", "",
        f"W3's INSERT of {BATCH} new `Fast` records as `canopy_gateway`, in a transaction rolled back, timed by psql "
        "(median of 15), with each index `canopy schema apply` built for the benchmark's schema dropped in turn inside "
        "the transaction. `canopy schema indexes` lists the same indexes with their sizes and scans.", "",
        "| the INSERT | ms | records/s at this cost alone |", "|---|---:|---:|",
    ]
    for label, ms in cost_rows:
        lines.append(f"| {label} | {ms:.1f} | {BATCH / ms * 1000:,.0f} |")

    lines += [
        "", "## W2 with a streaming replica (issue 19)", "",
        "W2's first page through one gateway, first against the primary alone, then with `--replica-url` naming a "
        "streaming replica of the same cluster (`canopy cluster replica`), which takes the reads: the client never "
        "writes, so no read needs a position. Both servers and the gateway share this machine's cores, so the sum "
        "cannot grow here; the per-server columns show where the work went (transactions committed in each server's "
        "database, `pg_stat_database.xact_commit`, per second). On separate machines each replica adds its own "
        "cores' worth of reads, and the primary keeps its cores for writes.", "",
        "| setup | requests/s | p50 | p99 | primary transactions/s | replica transactions/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, throughput, p50, p99, primary_tps, replica_tps in replica_rows:
        lines.append(f"| {label} | {throughput:,.0f} | {p50:.2f} | {p99:.2f} | {primary_tps:,.0f} | {replica_tps:,.0f} |")

    def goal(text, met):
        return f"| {text} | {'met' if met else '**not met**'} |"

    lines += [
        "", "W3 saved " f"{saved:,} records through the gateway in its runs; its throughput is what was saved "
        "(counted in the database from the run's start until its last batch committed), not what wrk counted. W3's ceiling runs the same transaction: identity, the write (names made unique per "
        "transaction with `replace()`), and the read-back of the saved ids taken from the write's answer with `\\gset`.", "",
        f"Under 64 connections (the W2 first page): {wide[0]:,.0f} requests/s, p50 {wide[1]:.2f} ms, p99 {wide[2]:.2f} ms "
        f"(p99 / p50 in each run: {', '.join(f'{t:.2f}×' for t in tails)}; the floor under the same load: "
        f"{', '.join(f'{t:.2f}×' for t in floor_tails)}, p50 {statistics.median(r[1] for r in floor_wide):.2f} ms; "
        f"pgbench with 64 clients: {', '.join(f'{t:.2f}×' for t in pgbench_tails)}, "
        f"p50 {statistics.median(r[1] for r in pgbench_wide):.2f} ms); "
        f"the gateway's peak RSS over the whole run: {memory:.0f} MB.", "",
        "Live notifications: from a commit's HTTP answer to the `zoneChanged` subscriber's `next` "
        f"(50 commits a run, medians of {options.runs} runs; issue 5 asks for under 100 ms): "
        f"p50 {latency[0]:.1f} ms, p99 {latency[1]:.1f} ms.", "",
        "Push (issue 23): a single-record save, 20 a run 1.1 s apart, medians of "
        f"{options.runs} runs: p50 {push['without']:.2f} ms with no push subscription (the write probes "
        f"`push_covered` only), {push['with']:.2f} ms with a DATABASE subscription and a webhook device (the write "
        "also queues an outbox row and NOTIFYs). From the commit's HTTP answer to the webhook's arrival on "
        f"loopback: p50 {push['p50']:.1f} ms, p99 {push['p99']:.1f} ms (the deliverer, woken by the NOTIFY, "
        "fans out under row-level security, queues the delivery, claims it and POSTs it signed).", "",
        "## The goals of issue 7, measured in this run", "",
        "| goal | measured | |", "|---|---|---|",
    ]
    w1 = rows[0]
    w3 = next(row for row in rows if row[0].startswith("W3"))
    w4 = next(row for row in rows if row[0].startswith("W4"))
    lines += [
        f"| W1 ≥ 0.8 of the ceiling | {w1[2] / w1[3]:.2f} | {'met' if w1[2] / w1[3] >= 0.8 else '**not met**'} |",
        f"| W2 ≥ 0.8 of the ceiling | {first[2] / first[3]:.2f} | {'met' if first[2] / first[3] >= 0.8 else '**not met**'} |",
        f"| W2 deep page p50 within 1.2× of the first | {deep[4] / first[4]:.2f}× | {'met' if deep[4] <= 1.2 * first[4] else '**not met**'} |",
        f"| W3 ≥ 20,000 records/s | {w3[2]:,.0f} | {'met' if w3[2] >= 20000 else '**not met**'} |",
        f"| W4 ≥ 50,000 records/s | {w4[2]:,.0f} | {'met' if w4[2] >= 50000 else '**not met**'} |",
        f"| W5 participant p50 within 1.15× of owner | {participant[4] / owner_row[4]:.2f}× | "
        f"{'met' if participant[4] <= 1.15 * owner_row[4] else '**not met**'} |",
        f"| W6 p50 at {scales[-1]:,} within 1.3× of {scales[0]:,} | {scale_rows[-1][4] / scale_rows[0][4]:.2f}× | "
        f"{'met' if scale_rows[-1][4] <= 1.3 * scale_rows[0][4] else '**not met**'} |",
        f"| p99 at 64 connections within 3× of p50 | {wide[2] / wide[1]:.2f}× | {'met' if wide[2] <= 3 * wide[1] else '**not met**'} |",
        f"| gateway RSS under 150 MB | {memory:.0f} MB | {'met' if memory < 150 else '**not met**'} |",
        "", "## The goals of issue 18, measured in this run", "",
        "| goal | measured | |", "|---|---|---|",
    ]
    for label, owner_tps, _, guest_tps, _ in membership_rows:
        lines.append(f"| {label}: a participant of {guest_shares:,} shares within 1.3× of the owner (pgbench) | "
                     f"{owner_tps / guest_tps:.2f}× | {'met' if owner_tps <= 1.3 * guest_tps else '**not met**'} |")
    lines.append(f"| W5 (the guest, {guest_shares:,} shares, through the gateway) p50 within 1.15× of the owner's W2 | "
                 f"{participant[4] / owner_row[4]:.2f}× | {'met' if participant[4] <= 1.15 * owner_row[4] else '**not met**'} |")
    lines.append(f"| p99 within 3× of p50 at 64 connections in every run ({len(tails)}) | "
                 f"{', '.join(f'{t:.2f}×' for t in tails)} | {'met' if all(t <= 3 for t in tails) else '**not met**'} |")
    w3_row = next(row for row in rows if row[0].startswith("W3"))
    lines.append(f"| W3 ≥ 20,000 records/s | {w3_row[2]:,.0f} | {'met' if w3_row[2] >= 20000 else '**not met**'} |")
    for name, g, f, c, gcpu, fcpu, g50, f50 in floor_rows:
        short = name.split(":")[0].split(" ")[0]
        lines += [
            f"| {short} ≥ 0.7× the floor's throughput | {g / f:.2f} | {'met' if g >= 0.7 * f else '**not met**'} |",
            f"| {short} ≤ 120 µs of gateway CPU a request | {gcpu:.0f} µs | {'met' if gcpu <= 120 else '**not met**'} |",
        ]
    if Gateway.hung:
        lines += ["", "**The gateway did not stop within 30 s of SIGTERM in this run** (killed; its threads are in "
                  "`.bench/gateway-hang.txt`)."]
    notes_path = ROOT / "docs" / "BENCHMARK_NOTES.md"
    lines += ["", f"What the numbers mean and what stands in the way: [docs/BENCHMARK_NOTES.md](docs/BENCHMARK_NOTES.md)."
              if notes_path.exists() else ""]
    Path(options.output).write_text("\n".join(lines).rstrip() + "\n")
    say(f"wrote {options.output}")
    run([BINARY, "cluster", "stop", "--data-dir", DATA])


if __name__ == "__main__":
    main()
