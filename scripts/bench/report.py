"""Reporting: BENCHMARKS.md's text from a run's figures, and the table of
the stack's floor and the gateway's CPU on its own."""
import os
import statistics
import time

from common import ROOT
from workloads import BATCH

FLOOR_HEADING = "## The stack's floor and the gateway's CPU (issue 18)"


def batch_cost_lines(cost_rows, warm_rows):
    """The section "What a batch of 400 saves pays for": cold by declared
    index (issue 18), and warm trigger by trigger (issue 51)."""
    lines = [
        f"## What a batch of {BATCH} saves pays for (issues 18 and 51)", "",
        f"W3's INSERT of {BATCH} new `Fast` records as `canopy_gateway`, in a transaction rolled back, timed by psql "
        "(median of 15) in a new session each run, with each index `canopy schema apply` built for the benchmark's "
        "schema dropped in turn inside the transaction. `canopy schema indexes` lists the same indexes with their "
        "sizes and scans.", "",
        "| the INSERT, a new session each run | ms | records/s at this cost alone |", "|---|---:|---:|",
    ]
    for label, ms in cost_rows:
        lines.append(f"| {label} | {ms:.1f} | {BATCH / ms * 1000:,.0f} |")
    if warm_rows:
        lines += [
            "", "The same INSERT on a warm connection, as a pooled gateway connection runs it (no PL/pgSQL to compile, "
            "the foreign keys' queries prepared): one session runs it once, then `EXPLAIN (ANALYZE, FORMAT JSON)` of "
            "it 9 times, each rolled back (`scripts/bench/batch_triggers.py`); medians. Each trigger's time and calls "
            "are PostgreSQL's own; a foreign key is its `RI_ConstraintTrigger`. \"the rest\" is the INSERT less its "
            "triggers: the heap and index inserts, row-level security's checks, the CHECK constraints and the "
            "triggers' WHEN tests.", "",
            "| the INSERT, warm | ms | calls |", "|---|---:|---:|",
        ]
        for label, ms, calls in warm_rows:
            lines.append(f"| {label} | {ms:.2f} | {'' if calls is None else f'{calls:,}'} |")
    return lines


def w3_row(row):
    """W3's row of the workloads table, printed alone."""
    name, unit, gateway, pgbench, p50, p50_pgbench, p99, p99_pgbench = row
    return [f"{name}: gateway {gateway:,.0f} {unit}, pgbench {pgbench:,.0f} {unit}, ratio {gateway / pgbench:.2f}; "
            f"p50 {p50:.2f} / {p50_pgbench:.2f} ms; p99 {p99:.2f} / {p99_pgbench:.2f} ms"]


def floor_table(floor_rows):
    """The floor section's table: its header and a row per workload (name,
    gateway, floor, pgbench, gateway CPU µs, floor CPU µs, p50 gateway, p50 floor)."""
    lines = [
        "| workload | gateway req/s | floor req/s | pgbench tps | gateway / floor | gateway CPU µs/request | floor CPU µs/request | p50 gateway | p50 floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, g, f, c, gcpu, fcpu, g50, f50, *_ in floor_rows:
        lines.append(f"| {name} | {g:,.0f} | {f:,.0f} | {c:,.0f} | {g / f:.2f} | {gcpu:.0f} | {fcpu:.0f} | {g50:.2f} | {f50:.2f} |")
    return lines


def benchmarks_md(options, scales, server_version, people, guest_shares, rows, floor_rows, membership_rows,
                  cost_rows, warm_rows, replica_rows, saved, under_64, latency, push, hung, public64, web_services,
                  move_times, speed):
    """BENCHMARKS.md's text. `options` as bench.py parses them; `under_64` as
    sections.wide_load returns it; `hung`: the gateway did not stop on
    SIGTERM; `speed`: issue 39's sections (speed_lines)."""
    wide, memory, tails = under_64["wide"], under_64["memory"], under_64["tails"]
    floor_wide, floor_tails = under_64["floor_wide"], under_64["floor_tails"]
    pgbench_wide, pgbench_tails = under_64["pgbench_wide"], under_64["pgbench_tails"]
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
        f"Machine: {cores} cores, {total_memory} GiB; PostgreSQL {server_version}; "
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

    w1_row = rows[0]
    w2_row = rows[1]
    w7_row = next(row for row in rows if row[0].startswith("W7"))
    w8_row = next(row for row in rows if row[0].startswith("W8"))
    w1_64 = next(row for row in public64 if row[0].startswith("W1"))
    w7_64 = next(row for row in public64 if row[0].startswith("W7"))
    lines += [
        "", "## The public database (issue 36)", "",
        "W7 asks for one public record and W8 for the W2 first page over the public database's zone (the same "
        f"{options.records:,} records, record type `Fast` without grants, so CloudKit's defaults: READ to `_world`), "
        "both without `Authorization`: row-level security decides by the type's grants, resolved once per statement "
        "(`sql/functions/public_grants.sql`). Below, W1 and W7 at 64 clients, through the gateway and through pgbench "
        "(the gateway's own statements, as `canopy_gateway`), runs interleaved; medians.", "",
        "| workload, 64 clients | gateway req/s | pgbench tps | p50 gateway | p50 pgbench |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, g, c, g50, c50 in public64:
        lines.append(f"| {name} | {g:,.0f} | {c:,.0f} | {g50:.2f} | {c50:.2f} |")
    lines += [
        "", "| goal (issue 36) | measured | |", "|---|---|---|",
        f"| W7 ≥ 0.8× the gateway's W1 (64 clients) | {w7_64[1] / w1_64[1]:.2f}× | {'met' if w7_64[1] >= 0.8 * w1_64[1] else '**not met**'} |",
        f"| W8 p50 within 1.3× of W2's p50 ({options.records:,} records) | {w8_row[4] / w2_row[4]:.2f}× | "
        f"{'met' if w8_row[4] <= 1.3 * w2_row[4] else '**not met**'} |",
        f"| policy cost: a public lookup through grants ≤ 1.2× a private one (pgbench tps, W1 / W7, {options.clients} clients) | "
        f"{w1_row[3] / w7_row[3]:.2f}× | {'met' if w1_row[3] <= 1.2 * w7_row[3] else '**not met**'} |",
        f"| policy cost: a public page through grants ≤ 1.2× a private one (pgbench tps, W2 / W8) | "
        f"{w2_row[3] / w8_row[3]:.2f}× | {'met' if w2_row[3] <= 1.2 * w8_row[3] else '**not met**'} |",
    ]

    lines += [
        "", "## CloudKit Web Services (issues 37 and 49)", "",
        "W9 is `records/lookup` of one record and W10 `records/query` for the W2 first page (the same date range, "
        "sort and 100 rows), through `/database/1/…` with `ckAPIToken` and `ckWebAuthToken`. Each is beside its "
        "GraphQL twin: the same question as a document and variables POSTed to `/graphql` "
        "(`scripts/bench/workloads.py`). Since issue 49 the Web Services door builds the planner's typed input and "
        "the plan writes CloudKit's record dictionaries in SQL, so the two doors share the plan and differ by what "
        f"each does before it (GraphQL's parse and check, Web Services' dictionaries) and by the answer's shape. Runs interleaved, {options.clients} clients; medians.", "",
        "| workload | Web Services req/s | GraphQL twin req/s | ratio | p50 WS | p50 twin | p99 WS | p99 twin | gateway CPU µs/request WS | twin |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, w, g, w50, g50, w99, g99, wcpu, gcpu in web_services:
        lines.append(f"| {name} | {w:,.0f} | {g:,.0f} | {w / g:.2f} | {w50:.2f} | {g50:.2f} | {w99:.2f} | {g99:.2f} | {wcpu:.0f} | {gcpu:.0f} |")
    lines += ["", "| goal (issue 49) | measured | |", "|---|---|---|"]
    for name, w, g, w50, g50, w99, g99, wcpu, gcpu in web_services:
        short = name.split(':')[0].split(' records')[0]
        lines.append(f"| {short} at least 1.0× its twin's throughput | {w / g:.2f}× | {'met' if w >= g else '**not met**'} |")
        lines.append(f"| {short} no more gateway CPU a request than its twin | {wcpu:.0f} / {gcpu:.0f} µs | {'met' if wcpu <= gcpu else '**not met**'} |")

    save_ms, move_ms = move_times
    lines += [
        "", "## Moving records (issue 38)", "",
        "`moveRecords` of 40 roots with their descendants (4 children each, 5 grandchildren each: 1,000 records) to "
        "another zone in one request, beside saving the same 1,000 new records in W3's shape (`modifyRecords` batches "
        f"of 400, three requests); one client over loopback, wall time per operation, medians of {options.runs} runs "
        "(each run saves a fresh tree, then moves it there and back: `scripts/bench/moves.py`).", "",
        "| operation | ms |", "|---|---:|",
        f"| save 1,000 new records (3 requests) | {save_ms:.0f} |",
        f"| move 1,000 records with descendants (1 request) | {move_ms:.0f} |",
        "", "| goal (issue 38) | measured | |", "|---|---|---|",
        f"| a move of 1,000 ≤ 2× saving 1,000 new | {move_ms / save_ms:.2f}× | {'met' if move_ms <= 2 * save_ms else '**not met**'} |",
    ]

    lines += [""] + speed_lines(options, rows, floor_rows, speed)

    lines += [
        "", FLOOR_HEADING, "",
        "The floor is `canopy-floor` (Server/Benchmarks/Floor): Hummingbird 2 and PostgresNIO, release build, answering by "
        "running the statement the gateway sends for the workload (captured above, parameters included) and writing "
        "its JSON; no GraphQL, authentication, logs or metrics. Same wrk script and clients. CPU per request is the "
        "process's user + system time over a run divided by the requests answered (/proc/PID/stat), median of the runs.", "",
    ] + floor_table(floor_rows)

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

    lines += [""] + batch_cost_lines(cost_rows, warm_rows)

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

    lines += [
        "", "W3 saved " f"{saved:,} records through the gateway in its runs; its throughput is what was saved "
        "(counted in the database from the run's start until its last batch committed), not what wrk counted. W3's ceiling runs the same transaction: identity and the write (names made unique per "
        "transaction with `replace()`), which since issue 51 answers the saved records itself: a batch of saves has no "
        "read-back.", "",
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
    for name, g, f, c, gcpu, fcpu, g50, f50, *_ in floor_rows:
        short = name.split(":")[0].split(" ")[0]
        lines += [
            f"| {short} ≥ 0.7× the floor's throughput | {g / f:.2f} | {'met' if g >= 0.7 * f else '**not met**'} |",
            f"| {short} ≤ 120 µs of gateway CPU a request | {gcpu:.0f} µs | {'met' if gcpu <= 120 else '**not met**'} |",
        ]
    lines += [""] + issue51_goals(rows, floor_rows, memory)
    if hung:
        lines += ["", "**The gateway did not stop within 30 s of SIGTERM in this run** (killed; its threads are in "
                  "`.bench/gateway-hang.txt`)."]
    notes_path = ROOT / "docs" / "BENCHMARK_NOTES.md"
    lines += ["", f"What the numbers mean and what stands in the way: [docs/BENCHMARK_NOTES.md](docs/BENCHMARK_NOTES.md)."
              if notes_path.exists() else ""]
    return "\n".join(lines).rstrip() + "\n"


def issue51_goals(rows, floor_rows, memory):
    """Issue 51's goals this run measures (the first sync's are in its own
    section): the gateway's CPU against the floor's, W1 against pgbench, W3,
    and the peak RSS at 64 connections."""
    def met(ok):
        return "met" if ok else "**not met**"
    lines = ["## The goals of issue 51, measured in this run", "", "| goal | measured | |", "|---|---|---|"]
    for name, g, f, c, gcpu, fcpu, *_ in floor_rows:
        short = name.split(":")[0].split(" ")[0]
        lines.append(f"| {short}: gateway CPU a request ≤ 1.15× the floor's | {gcpu:.0f} / {fcpu:.0f} µs, "
                     f"{gcpu / fcpu:.2f}× | {met(gcpu <= 1.15 * fcpu)} |")
    w1 = rows[0]
    lines.append(f"| W1 ≥ 0.25× pgbench | {w1[2] / w1[3]:.2f}× | {met(w1[2] >= 0.25 * w1[3])} |")
    w3 = next(row for row in rows if row[0].startswith("W3"))
    lines.append(f"| W3 ≥ 15,000 records/s | {w3[2]:,.0f} | {met(w3[2] >= 15000)} |")
    lines.append(f"| W3 ≥ 0.9× its own transaction under pgbench | {w3[2] / w3[3]:.2f}× | {met(w3[2] >= 0.9 * w3[3])} |")
    lines.append(f"| peak RSS at 64 connections ≤ 150 MB | {memory:.0f} MB | {met(memory <= 150)} |")
    return lines


def speed_lines(options, rows, floor_rows, speed):
    """Issue 39's section: the cold rows, the gateway's CPU against the
    floor's, the tail in sets, W11. `speed` holds speed.py's results:
    {"cold": cold_start, "tails": tail_sets, "writers": many_writers}."""
    from speed import WRITER_BATCH, WRITERS
    met = lambda ok: "met" if ok else "**not met**"
    cold, analysed, tails, writers = speed["cold"], speed["analysed"], speed["tails"], speed["writers"]
    lines = [
        "## Speed (issue 39)", "",
        "### Right after loading", "",
        "The cold rows are W1 and W2's first page through a gateway started right after the loading above (and a "
        "`CHECKPOINT`, so the load's writes to disk do not fall on these runs alone), before any "
        "`ANALYZE` and with autovacuum off: the gateway's statements run on generic plans (`plan_cache_mode = "
        "force_generic_plan`), made from no statistics at all. The steady rows are the same runs through a gateway "
        "started right after `ANALYZE` of every table (the main table's rows come later, after other sections). "
        f"{options.clients} clients; medians of {options.runs} runs.", "",
        "| workload | cold req/s | steady req/s | cold / steady | p50 cold | p50 steady | p99 cold | p99 steady |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in (("W1", rows[0]), ("W2", rows[1])):
        rps, p50, p99 = cold[name]
        steady, s50, s99 = analysed[name]
        lines.append(f"| {row[0]} | {rps:,.0f} | {steady:,.0f} | {rps / steady:.2f} | {p50:.2f} | {s50:.2f} | "
                     f"{p99:.2f} | {s99:.2f} |")
    lines += ["", "### The gateway's CPU a request against the floor's", "",
              "From the floor section below (the same runs): user + system CPU of each process over a run, divided by "
              "the requests it answered; medians.", "",
              "| workload | gateway µs | floor µs | gateway / floor |", "|---|---:|---:|---:|"]
    for name, g, f, c, gcpu, fcpu, *_ in floor_rows:
        lines.append(f"| {name} | {gcpu:.0f} | {fcpu:.0f} | {gcpu / fcpu:.2f} |")
    lines += ["", "### The tail at moderate load", "",
              f"W1 and W2's first page at {options.clients} clients, gateway then pgbench (the gateway's statement, as "
              f"`canopy_gateway`), in three sets of {options.runs} runs; each set's medians. The first set is the main "
              "table's runs, where the floor (the same statement through Hummingbird and PostgresNIO alone, as many "
              "connections as the gateway's requests get) ran too: its p99 is what the stack does to the tail without "
              "the gateway's own work.", "",
              "| workload | set | p50 gateway | p50 pgbench | p99 gateway | p99 pgbench | p99 gateway / pgbench | p99 floor | p99 floor / pgbench |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    floor_p99 = {row[0].split(" ")[0]: row[9] for row in floor_rows if len(row) > 9}
    for name, sets in tails.items():
        for number, (g99, c99, g50, c50) in enumerate(sets, 1):
            floor = f"{floor_p99[name]:.2f} | {floor_p99[name] / c99:.2f}" if number == 1 and name in floor_p99 else "| "
            lines.append(f"| {name} | {number} | {g50:.2f} | {c50:.2f} | {g99:.2f} | {c99:.2f} | {g99 / c99:.2f} | {floor} |")
    g, c, g50, c50, g99, c99 = writers
    lines += ["", "### W11: many writers in many zones", "",
              f"{WRITERS} users, each with its own zone and its own connection, each saving batches of {WRITER_BATCH} new "
              "records in W3's shape at once (wrk, a thread per user). The gateway's records/s are counted in the "
              f"database. pgbench runs the gateway's own transaction for such a batch (identity, the write, the "
              f"read-back) with {WRITERS} clients, client n as user n in their own zone. Runs interleaved; medians.", "",
              "| workload | gateway records/s | pgbench records/s | ratio | p50 gateway | p50 pgbench | p99 gateway | p99 pgbench |",
              "|---|---:|---:|---:|---:|---:|---:|---:|",
              f"| W11 {WRITERS} writers, batches of {WRITER_BATCH}, a zone each | {g:,.0f} | {c:,.0f} | {g / c:.2f} | "
              f"{g50:.2f} | {c50:.2f} | {g99:.2f} | {c99:.2f} |"]
    lines += ["", "| goal (issue 39) | measured | |", "|---|---|---|"]
    for name in ("W1", "W2"):
        ratio = cold[name][0] / analysed[name][0]
        lines.append(f"| {name} cold ≥ 0.9× steady | {ratio:.2f}× | {met(ratio >= 0.9)} |")
    for name, g_, f_, c_, gcpu, fcpu, *_ in floor_rows:
        short = name.split(":")[0].split(" ")[0]
        lines.append(f"| {short} gateway CPU a request ≤ 1.15× the floor's | {gcpu / fcpu:.2f}× | {met(gcpu <= 1.15 * fcpu)} |")
    for name, sets in tails.items():
        ratios = [g99 / c99 for g99, c99, _, _ in sets]
        lines.append(f"| {name} p99 ≤ 2.5× pgbench's at {options.clients} clients, every set | "
                     f"{', '.join(f'{r:.2f}×' for r in ratios)} | {met(all(r <= 2.5 for r in ratios))} |")
    lines.append(f"| W11 ≥ 0.8× pgbench | {g / c:.2f}× | {met(g >= 0.8 * c)} |")
    lines += ["", "Why a goal is not met, where one is not, and what was measured on the way: "
              "[docs/BENCHMARK_NOTES.md](docs/BENCHMARK_NOTES.md), \"Issue 39\"."]
    return lines
