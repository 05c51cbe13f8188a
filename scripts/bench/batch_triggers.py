"""What a W3 batch's INSERT pays for on a warm connection, trigger by
trigger (issue 51, item 2).

The table in BENCHMARKS.md "What a batch of 400 saves pays for" times the
INSERT in a new psql session per run, so it also holds what a pooled
gateway connection never pays again: compiling PL/pgSQL, preparing the
foreign keys' queries, loading caches. Here one session runs the batch once
to warm up, then `EXPLAIN (ANALYZE, FORMAT JSON)` of the same INSERT in a
transaction rolled back, `runs` times, and reads each trigger's time and
calls from the plan (BEFORE and AFTER row triggers, statement triggers, and
the foreign keys' `RI_ConstraintTrigger`s). What is left (the heap and index
inserts, row-level security, CHECK constraints, triggers' WHEN tests) is
the INSERT's time less its triggers'."""
import json
import re
import statistics
import subprocess

from common import say
from workloads import BATCH

MARK = "canopy-explain"


def insert_sql(zone_id):
    """W3's batch as one INSERT, names unique per run."""
    return (f"INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, fields) "
            f"SELECT {zone_id}, (SELECT owner_id FROM canopy.zones WHERE id = {zone_id}), 'warm' || g || '_' || md5(random()::text), 'Fast', "
            "jsonb_build_object('hours', g % 48, 'endDate', jsonb_build_object('type', 'TIMESTAMP', 'value', 1800000000000 + g * 60000), "
            "'note', 'bulk ' || g, 'tags', jsonb_build_array('t' || (g % 10))) "
            f"FROM generate_series(1, {BATCH}) g")


def explained_runs(cluster, zone_id, user_id, before="", mode="development", runs=9):
    """The INSERT's EXPLAIN ANALYZE plans (dicts), after one warm-up, in one
    session. `before` runs first in each transaction as the administrator."""
    setup = (f"SET LOCAL ROLE canopy_gateway;\n"
             f"SELECT set_config('canopy.user_id', '{user_id}', true), set_config('canopy.schema_mode', '{mode}', true) \\g /dev/null\n")
    script = [f"BEGIN;\n{before}\n{setup}{insert_sql(zone_id)};\nROLLBACK;"]
    for _ in range(runs):
        script.append(f"BEGIN;\n{before}\n{setup}\\echo {MARK}\nEXPLAIN (ANALYZE, FORMAT JSON) {insert_sql(zone_id)};\nROLLBACK;")
    out = subprocess.run(cluster.psql_args(), input="\n".join(script), capture_output=True, text=True, check=True).stdout
    plans = []
    for chunk in out.split(MARK)[1:]:
        text = chunk[chunk.index("["):chunk.rindex("]") + 1]
        plans.append(json.loads(text)[0])
    return plans


def label(trigger):
    """A foreign key's trigger by its constraint, others by their name."""
    return f"foreign key {trigger['Constraint Name']}" if "Constraint Name" in trigger else trigger["Trigger Name"]


def breakdown(cluster, zone_id, user_id, before="", mode="development", runs=9):
    """(whole ms, {trigger: (ms, calls)}) medians over the runs."""
    plans = explained_runs(cluster, zone_id, user_id, before, mode, runs)
    whole = statistics.median(p["Execution Time"] for p in plans)
    names = {label(t) for p in plans for t in p.get("Triggers", [])}
    triggers = {}
    for name in sorted(names):
        times, calls = [], 0
        for plan in plans:
            for t in plan.get("Triggers", []):
                if label(t) == name:
                    times.append(t["Time"])
                    calls = t["Calls"]
        triggers[name] = (statistics.median(times), calls)
    return whole, triggers


def warm_costs(cluster, zone_id, user_id, runs=9):
    """Rows (label, ms, calls or None) for BENCHMARKS.md: the warm INSERT,
    each trigger, the rest, the INSERT without triggers and foreign keys,
    and the same batch in production mode (the declared-field check on)."""
    say(f"a batch of {BATCH} saves on a warm connection, trigger by trigger ({runs} runs each, EXPLAIN ANALYZE)")
    whole, triggers = breakdown(cluster, zone_id, user_id, runs=runs)
    rows = [("the INSERT, warm (every index, every trigger), development mode", whole, None)]
    for name, (ms, calls) in sorted(triggers.items(), key=lambda item: -item[1][0]):
        rows.append((name, ms, calls))
    rows.append(("the rest: heap and index inserts, row-level security, CHECKs, WHEN tests", whole - sum(ms for ms, _ in triggers.values()), None))
    off, _ = breakdown(cluster, zone_id, user_id, "SET LOCAL session_replication_role = replica;", runs=runs)
    rows.append(("the INSERT, warm, triggers and foreign keys off", off, None))
    declared = cluster.psql("SELECT string_agg('canopy.' || index_name, ', ') FROM canopy.schema_indexes")
    if declared:
        bare, _ = breakdown(cluster, zone_id, user_id, f"DROP INDEX {declared}; SET LOCAL session_replication_role = replica;", runs=runs)
        rows.append(("the INSERT, warm, triggers and foreign keys off, without the declared indexes", bare, None))
    production, production_triggers = breakdown(cluster, zone_id, user_id, mode="production", runs=runs)
    rows.append(("the INSERT, warm, production mode (declared fields checked)", production, None))
    for name, (ms, calls) in production_triggers.items():
        if name not in triggers or "declared" in name:
            rows.append((f"production mode: {name}", ms, calls))
    for name, ms, calls in rows:
        say(f"  {name}: {ms:.2f} ms" + (f" ({calls} calls)" if calls is not None else ""))
    return rows
