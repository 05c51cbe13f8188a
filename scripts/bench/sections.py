"""The benchmark's sections, each run and reduced to its rows: the
workloads against pgbench and the floor, 64 connections, memberships,
what a batch pays for, notifications and push, a streaming replica."""
import json
import re
import statistics
import subprocess
import sys
import time
import urllib.request

import batch_triggers
import common
import plan_rates
from common import DATA, PORT, run, say
from drivers import run_pgbench, run_wrk
from latency import notification_latency, push_latency
from measure import context_switches, cpu_seconds, peak_memory_mb, percentile, quiet, saved_batch_records
from servers import Gateway
from workloads import BATCH, ceiling


def run_workloads(cluster, gateway, floors, workloads, options):
    """Each workload `options.runs` times through the running gateway, then
    through pgbench, then (W1, W2's first page) through its running floor,
    with the gateway's and the floor's CPU per request. Returns the rows
    (name, unit, gateway, pgbench, p50 gateway, p50 pgbench, p99 gateway,
    p99 pgbench) and the floor's rows (name, gateway, floor, pgbench,
    gateway CPU µs, floor CPU µs, p50 gateway, p50 floor, p99 gateway, p99 floor)."""
    floor_rows = []
    rows = []
    for name, unit, scale, lua, template, (script, defines), header in workloads:
        say(f"{name}: {options.runs} runs of {options.seconds} s each side, {options.clients} clients")
        gateway_runs, ceiling_runs, floor_runs, gateway_cpu_runs, floor_cpu_runs = [], [], [], [], []
        plans_before = plan_rates.outcomes()
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
                cpu_before, switches_before = cpu_seconds(floor.process), context_switches(floor.process)
                floor_runs.append(run_wrk(lua, options.clients, options.seconds, environment, url=floor.url))
                floor_cpu_runs.append((cpu_seconds(floor.process) - cpu_before) / (floor_runs[-1][0] * options.seconds))
                switches = (context_switches(floor.process) - switches_before) / (floor_runs[-1][0] * options.seconds)
                say(f"  floor run {run_number + 1}: {switches:.1f} context switches a request")
        plan_rates.RECORDER.add(name, plans_before)
        median = lambda runs, i: statistics.median(r[i] for r in runs)
        if name in floors:
            floor_median = [median(floor_runs, i) for i in range(3)]
            floor_rows.append((name, median(gateway_runs, 0), floor_median[0], median(ceiling_runs, 0),
                               statistics.median(gateway_cpu_runs) * 1e6, statistics.median(floor_cpu_runs) * 1e6,
                               median(gateway_runs, 1), floor_median[1], median(gateway_runs, 2), floor_median[2]))
            say(f"  floor {floor_median[0]:,.0f} {unit}; gateway / floor {floor_rows[-1][1] / floor_median[0]:.2f}; "
                f"CPU per request: gateway {floor_rows[-1][4]:.0f} µs, floor {floor_rows[-1][5]:.0f} µs; "
                f"p99 gateway {floor_rows[-1][8]:.2f} ms, floor {floor_rows[-1][9]:.2f} ms")
        gateway_median = [median(gateway_runs, i) for i in range(3)]
        ceiling = [median(ceiling_runs, i) for i in range(3)]
        rows.append((name, unit, gateway_median[0] * scale, ceiling[0] * scale, gateway_median[1], ceiling[1], gateway_median[2], ceiling[2]))
        say(f"  gateway {gateway_median[0] * scale:,.0f} {unit}, pgbench {ceiling[0] * scale:,.0f} {unit}, "
            f"ratio {gateway_median[0] / ceiling[0]:.2f}")
    return rows, floor_rows


def wide_load(cluster, gateway, floor, workload, options):
    """W2's first page (`workload`) under 64 connections through the gateway,
    then the floor and pgbench under the same load: what the stack and the
    machine do to the tail without the gateway's own work. Also the
    gateway's peak RSS so far."""
    lua, (records_script, records_defines) = workload[3], workload[5]
    say(f"W2 first page under 64 connections: {options.runs} runs of {options.seconds} s")
    wide_runs = [run_wrk(lua, 64, options.seconds, {}) for _ in range(options.runs)]
    wide = (statistics.median(r[0] for r in wide_runs), statistics.median(r[1] for r in wide_runs),
            statistics.median(r[2] for r in wide_runs))
    memory = peak_memory_mb(gateway.process)
    tails = [r[2] / r[1] for r in wide_runs]
    floor_wide = [run_wrk(lua, 64, options.seconds, {}, url=floor.url) for _ in range(options.runs)]
    pgbench_wide = [run_pgbench(cluster, records_script, records_defines, 64, options.seconds)
                    for _ in range(options.runs)]
    floor_tails = [r[2] / r[1] for r in floor_wide]
    pgbench_tails = [r[2] / r[1] for r in pgbench_wide]
    say(f"  the floor at 64: p99 / p50 by run {', '.join(f'{t:.2f}' for t in floor_tails)}; "
        f"pgbench at 64: {', '.join(f'{t:.2f}' for t in pgbench_tails)}")
    say(f"  {wide[0]:,.0f} requests/s, p50 {wide[1]:.2f} ms, p99 {wide[2]:.2f} ms; p99 / p50 by run: "
        f"{', '.join(f'{t:.2f}' for t in tails)}; gateway peak RSS {memory:.0f} MB")
    return {"wide": wide, "memory": memory, "tails": tails, "floor_wide": floor_wide, "floor_tails": floor_tails,
            "pgbench_wide": pgbench_wide, "pgbench_tails": pgbench_tails}


def memberships(cluster, statements, guest_shares, options):
    """The same reads run by pgbench for the zone's owner and for the guest:
    rows (label, owner tps, owner p50, guest tps, guest p50)."""
    say(f"row-level security and memberships: the owner and the guest (accepted {guest_shares} shares), "
        f"pgbench, {options.runs} runs of {options.seconds} s each")
    membership_rows = []
    for label, owner_statement, guest_statement in (("one record (W1's lookup)", "lookup", "shared lookup"),
                                                    ("W2's first page", "records", "shared")):
        sides = []
        for statement in (owner_statement, guest_statement):
            script, defines = ceiling(statements, statement)[0]
            runs = [run_pgbench(cluster, script, defines, options.clients, options.seconds) for _ in range(options.runs)]
            sides.append((statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)))
        membership_rows.append((label, *sides[0], *sides[1]))
        say(f"  {label}: owner {sides[0][0]:,.0f} tps, guest {sides[1][0]:,.0f} tps, "
            f"owner / guest {sides[0][0] / sides[1][0]:.2f}")
    return membership_rows


def batch_costs(cluster, owner_id):
    """What a W3 batch pays for, in the owner's Bulk zone: rows (label, ms)."""
    say(f"what a batch of {BATCH} saves pays for: the INSERT with and without each declared index (15 runs each)")
    bulk_zone = cluster.psql(f"SELECT id FROM canopy.zones WHERE owner_id = {owner_id} AND name = 'Bulk'")
    cost_rows = index_costs(cluster, bulk_zone, owner_id)
    for label, ms in cost_rows:
        say(f"  {label}: {ms:.1f} ms")
    return cost_rows


def batch_trigger_costs(cluster, owner_id):
    """What a W3 batch pays for on a warm connection, trigger by trigger, in
    the owner's Bulk zone: rows (label, ms, calls or None)."""
    bulk_zone = cluster.psql(f"SELECT id FROM canopy.zones WHERE owner_id = {owner_id} AND name = 'Bulk'")
    return batch_triggers.warm_costs(cluster, bulk_zone, owner_id)


def subscription_latency(token, options):
    """Commit to subscriber, medians over the runs: (p50, p99) in ms."""
    say(f"subscription latency: {options.runs} runs of 50 commits")
    latency_runs = [notification_latency(token) for _ in range(options.runs)]
    latency = (statistics.median(statistics.median(r) for r in latency_runs),
               statistics.median(percentile(r, 0.99) for r in latency_runs))
    say(f"  commit to subscriber: p50 {latency[0]:.1f} ms, p99 {latency[1]:.1f} ms")
    return latency


def push_latencies(token, options):
    """A save's p50 without and with a push subscriber, and commit to
    webhook p50 and p99, medians over the runs (ms)."""
    say(f"push: {options.runs} runs of 20 single-record saves without, then with, a DATABASE subscription "
        "and a webhook device (commits 1.1 s apart)")
    push_runs = [push_latency(token) for _ in range(options.runs)]
    push = {"without": statistics.median(statistics.median(r[0]) for r in push_runs),
            "with": statistics.median(statistics.median(r[1]) for r in push_runs),
            "p50": statistics.median(statistics.median(r[2]) for r in push_runs),
            "p99": statistics.median(percentile(r[2], 0.99) for r in push_runs)}
    say(f"  save p50 {push['without']:.2f} ms without a subscriber, {push['with']:.2f} ms with one; "
        f"commit to webhook p50 {push['p50']:.1f} ms, p99 {push['p99']:.1f} ms")
    return push


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
        INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, fields)
        SELECT {zone_id}, (SELECT owner_id FROM canopy.zones WHERE id = {zone_id}), 'cost' || g || '_' || md5(random()::text), 'Fast',
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


def replica_comparison(cluster, lua, options):
    """W2's first page through a gateway without and with a streaming replica
    of the cluster; per-server transactions from each one's pg_stat_database."""
    say("W2 with a streaming replica: making one (canopy cluster replica r1)")
    out = run([common.BINARY, "cluster", "replica", "r1", "--data-dir", DATA])
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


def public_at_64(cluster, workloads, options):
    """W1 and W7 (a lookup signed in, and of a public record without a
    token) at 64 clients, each through the gateway and through pgbench,
    runs interleaved (issue 36: anonymous must not cost more than signed
    in). Returns (name, gateway req/s, pgbench tps, p50 gateway, p50
    pgbench), medians of the runs."""
    chosen = [w for w in workloads if w[0].startswith("W1") or w[0].startswith("W7")]
    runs = {w[0]: ([], []) for w in chosen}
    say(f"W1 and W7 at 64 clients: {options.runs} runs of {options.seconds} s each side")
    for _ in range(options.runs):
        for name, unit, scale, lua, template, (script, defines), header in chosen:
            runs[name][0].append(run_wrk(lua, 64, options.seconds, template))
            runs[name][1].append(run_pgbench(cluster, script, defines, 64, options.seconds, header))
    rows = []
    for name, (gateway_runs, ceiling_runs) in runs.items():
        median = lambda values, i: statistics.median(v[i] for v in values)
        rows.append((name, median(gateway_runs, 0), median(ceiling_runs, 0), median(gateway_runs, 1), median(ceiling_runs, 1)))
        say(f"  {name}: gateway {rows[-1][1]:,.0f} req/s, pgbench {rows[-1][2]:,.0f} tps")
    return rows


def web_services(gateway, pairs, options):
    """Each Web Services request beside its GraphQL twin (the same document
    and variables, POST /graphql), runs interleaved, at `options.clients`.
    Returns (name, Web Services req/s, twin req/s, p50 WS, p50 twin, p99 WS,
    p99 twin, gateway CPU µs a request WS, twin), medians of the runs
    (issue 37: within 1.1× of the twin)."""
    rows = []
    for name, (lua, path), twin in pairs:
        say(f"{name}: {options.runs} runs of {options.seconds} s, Web Services and its GraphQL twin")
        # Once by hand first: a 200 carrying an item's error would count as answered.
        body = re.search(r'wrk.body = (".*")', lua).group(1)
        request = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=json.loads(body).encode(),
                                         headers={"Content-Type": "application/json"})
        answer = json.loads(urllib.request.urlopen(request, timeout=10).read())
        if not answer.get("records") or any("serverErrorCode" in r for r in answer["records"]):
            sys.exit(f"{name}: the Web Services answer is not records: {answer}")
        ws_runs, twin_runs = [], []
        for _ in range(options.runs):
            for runs, script, url in ((ws_runs, lua, f"http://127.0.0.1:{PORT}{path}"), (twin_runs, twin, common.URL)):
                before = cpu_seconds(gateway.process)
                with plan_rates.RECORDER.around(name + (" (Web Services)" if runs is ws_runs else " (GraphQL twin)")):
                    result = run_wrk(script, options.clients, options.seconds, {}, url=url)
                runs.append(result + ((cpu_seconds(gateway.process) - before) / (result[0] * options.seconds) * 1e6,))
        median = lambda runs, i: statistics.median(r[i] for r in runs)
        rows.append((name, median(ws_runs, 0), median(twin_runs, 0), median(ws_runs, 1), median(twin_runs, 1),
                     median(ws_runs, 2), median(twin_runs, 2), median(ws_runs, 3), median(twin_runs, 3)))
        say(f"  Web Services {rows[-1][1]:,.0f} req/s, GraphQL twin {rows[-1][2]:,.0f} req/s, ratio {rows[-1][1] / rows[-1][2]:.2f}; "
            f"gateway CPU a request {rows[-1][7]:.0f} µs and {rows[-1][8]:.0f} µs")
    return rows


def moves(token, options):
    """Issue 38: (save ms, move ms) for 1,000 records, medians of the runs."""
    from moves import move_costs
    say(f"moves: {options.runs} runs of saving 1,000 new records in batches of 400, then moving them with their "
        "descendants to another zone and back in one request each")
    save_ms, move_ms = move_costs(token, options.runs)
    say(f"  save 1,000: {save_ms:.0f} ms; move 1,000: {move_ms:.0f} ms ({move_ms / save_ms:.2f}×)")
    return save_ms, move_ms
