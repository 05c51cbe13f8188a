"""Loading: a fresh migrated cluster in .bench, the benchmark's users, the
population around them, the zones of Fasting-like records, the schema."""
import json
import shutil
import subprocess
import time
from types import SimpleNamespace

import common
import population
from common import DATA, ROOT, Cluster, run, say
from servers import graphql
from workloads import CHANGES, RECORDS_ARGS, records_query


def add_user(name, email=None):
    """A user and its bearer token: {"userRecordName", "token", "id"}."""
    arguments = [common.BINARY, "users", "add", name, "--json", "--data-dir", DATA] + (["--email", email] if email else [])
    return json.loads(run(arguments))


def seed(cluster, user, zone, records, public=False):
    """A zone of `records` Fasting-like records owned by `user`, loaded with
    COPY, triggers off (their columns filled as the triggers would); with
    `public`, the same records in the public database's zone, created by
    `user` (W7, W8). Returns the zone's first and last change positions."""
    user_id = cluster.psql(f"SELECT id FROM canopy.users WHERE record_name = '{user['userRecordName']}'")
    owner_id = 0 if public else user_id      # the public zone's owner is user 0 (migrations/0038)
    if public:
        zone_id = cluster.psql("SELECT id FROM canopy.zones WHERE owner_id = 0")
    else:
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
            lines.append(f"{zone_id}\t{owner_id}\tr{g}\tFast\t{population.fast_fields(g)}\t{position}\t{position:x}\t"
                         f"{user_id}\t{user_id}\t{writer}\t{writer}\n")
            if len(lines) == 50_000:
                yield "".join(lines)
                lines = []
        yield "".join(lines)

    cluster.copy_in("COPY canopy.records (zone_id, owner_id, record_name, record_type, fields, change_seq, change_tag, "
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


def fresh_cluster():
    """Stops and removes .bench, then starts a new cluster there, migrated."""
    if DATA.exists():
        subprocess.run([str(common.BINARY), "cluster", "stop", "--data-dir", str(DATA)], capture_output=True)
        shutil.rmtree(DATA)
    DATA.mkdir()
    say("starting a fresh cluster in .bench and migrating")
    cluster = Cluster()
    # Off until settle(): the cold rows (issue 39) are measured right after
    # loading, before any statistics exist.
    cluster.psql("ALTER SYSTEM SET autovacuum = off")
    cluster.psql("SELECT pg_reload_conf()")
    run([common.BINARY, "migrate", "up", "--data-dir", DATA, "--migrations-dir", ROOT / "migrations"])
    return cluster


def settle(cluster):
    """The tables analysed and autovacuum back on: the steady state every
    section but the cold rows measures."""
    started = time.monotonic()
    cluster.psql("ANALYZE")
    cluster.psql("ALTER SYSTEM RESET autovacuum")
    cluster.psql("SELECT pg_reload_conf()")
    say(f"analysed every table in {time.monotonic() - started:.1f} s; autovacuum on")


def load(cluster, options, scales):
    """The benchmark's owner and guest, the population around them, the
    owner's Bench zone of --records records and a zone for each other of
    `scales` (W6), then the schema applied; nothing analysed (settle). Returns
    owner, guest, owner_id, guest_id, people (the population's summary),
    first_position, last_position (Bench's) and scale_zones."""
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
    # The public database (issue 36): the same records again, in its zone,
    # for W7 and W8; Fast has no grants, so CloudKit's defaults (READ to
    # _world) let a request without a token read them.
    seed(cluster, owner, "_defaultZone", options.records, public=True)
    scale_zones = {}
    for scale in scales:
        scale_zones[scale] = "Bench" if scale == options.records else f"S{scale}"
        if scale != options.records:
            seed(cluster, owner, scale_zones[scale], scale)
    schema_file = DATA / "bench.ckdb"
    schema_file.write_text(SCHEMA)
    started = time.monotonic()
    say("canopy schema apply: declaring Fast's fields and building their indexes")
    run([common.BINARY, "schema", "apply", schema_file, "--data-dir", DATA, "--migrations-dir", ROOT / "migrations"])
    say(f"  done in {time.monotonic() - started:.1f} s")
    return SimpleNamespace(owner=owner, guest=guest, owner_id=owner_id, guest_id=guest_id, people=people,
                           first_position=first_position, last_position=last_position, scale_zones=scale_zones)


def share_bench(owner, guest):
    """The owner shares Bench with the guest, READ_ONLY, and the guest
    accepts (through the running gateway)."""
    share = graphql(owner["token"], 'mutation { saveShare(zoneName: "Bench", participants: [{email: "guest@example.com", '
                                    'permission: READ_ONLY}]) { url } }')["saveShare"]
    graphql(guest["token"], 'mutation($u: String!) { acceptShare(url: $u) { status } }', {"u": share["url"]})


def walk_feed(token):
    """Through the running gateway: W3's Bulk zone made, Bench's change feed
    walked once and W2's cursor followed 50 pages. Returns the feed's token
    at every page (W4 starts from them) and the cursor 50 pages deep."""
    graphql(token, 'mutation { saveZone(zoneName: "Bulk") { zoneName } }')
    tokens = []
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
    return tokens, cursor
