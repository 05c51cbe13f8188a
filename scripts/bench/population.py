"""The benchmark's background population: many owners, zones of skewed
sizes, zone-wide and record-hierarchy shares, and participants of every
role and status, so that row-level security and the indexes work over a
table shaped like a real app's rather than one user's zone.

Loaded fast: records go in with COPY (streamed from here, triggers off,
their columns filled as the triggers would fill them); users, zones,
shares and participants, a few thousand rows, with set-based INSERTs.

Used by the benchmark (loading.py; bench.py's `--owners`, `--population`);
on its own, into the migrated cluster in .bench (CANOPY_BENCH_BINARY picks
the canopy binary):
    python3 scripts/bench/population.py --owners 1000 --records 100000
"""
import argparse
import io
import json
import random
import time

from common import Cluster   # the cluster in .bench, as the benchmark starts it

# Every role and status a participant can have, cycled through the shares'
# invitations (the owner's own row is added to every share apart).
INVITATIONS = [
    ("PRIVATE_USER", "READ_WRITE", "ACCEPTED"),
    ("PRIVATE_USER", "READ_ONLY", "ACCEPTED"),
    ("PRIVATE_USER", "READ_ONLY", "PENDING"),
    ("ADMINISTRATOR", "READ_WRITE", "ACCEPTED"),
    ("PRIVATE_USER", "READ_WRITE", "REMOVED"),
    ("PUBLIC_USER", "READ_ONLY", "ACCEPTED"),
    ("ADMINISTRATOR", "READ_WRITE", "PENDING"),
    ("PRIVATE_USER", "READ_ONLY", "REMOVED"),
]


def zone_sizes(zones, records, skew=1.1):
    """Sizes for `zones` zones holding `records` records in all, Zipf-like:
    a few large zones, a long tail of small ones; each at least 1."""
    weights = [1 / (rank ** skew) for rank in range(1, zones + 1)]
    total = sum(weights)
    sizes = [max(1, int(records * weight / total)) for weight in weights]
    sizes[0] += records - sum(sizes)
    return sizes


def fast_fields(number):
    """A Fasting-like record's fields as JSON text (TIMESTAMP, INT64, STRING,
    LIST<STRING>), formatted directly: the benchmark writes millions."""
    return (f'{{"hours":{number % 48},"endDate":{{"type":"TIMESTAMP","value":{1_700_000_000_000 + number * 60_000}}},'
            f'"note":"fast number {number}","tags":["t{number % 10}"]}}')


def seed_population(psql, psql_stdin, owners, records, seed=7):
    """Loads the population. `psql(sql)` runs SQL as the administrator and
    returns its text; `psql_stdin(sql, data)` runs a COPY … FROM STDIN with
    `data`. Returns a summary dict for the benchmark's notes."""
    started = time.monotonic()
    rng = random.Random(seed)
    first_user = int(psql(f"""
        SET session_replication_role = replica;
        WITH added AS (
            INSERT INTO canopy.users (name, email)
            SELECT 'owner' || lpad(g::text, 5, '0'), 'owner' || g || '@population.example'
              FROM generate_series(1, {owners}) g
            RETURNING id)
        SELECT min(id) FROM added;
        """).splitlines()[-1])
    user_ids = list(range(first_user, first_user + owners))
    names = dict(line.split("|") for line in psql(
        f"SELECT id || '|' || record_name FROM canopy.users WHERE id BETWEEN {first_user} AND {first_user + owners - 1}").splitlines())

    # Three zones an owner on average; sizes skewed over all zones.
    zone_count = owners * 3
    sizes = zone_sizes(zone_count, records)
    rng.shuffle(sizes)
    zone_owner = [user_ids[index % owners] for index in range(zone_count)]
    zone_rows = io.StringIO()
    for index, owner in enumerate(zone_owner):
        zone_rows.write(f"{owner}\tZone{index}\n")
    psql_stdin("COPY canopy.zones (owner_id, name) FROM STDIN", zone_rows.getvalue())
    zone_ids = [int(line) for line in psql(
        f"SELECT id FROM canopy.zones WHERE owner_id BETWEEN {first_user} AND {first_user + owners - 1} "
        "AND name LIKE 'Zone%' ORDER BY substr(name, 5)::int").splitlines()]

    # Records: 30% of them children of the zone's every tenth record, so
    # record-hierarchy shares have subtrees.
    start = int(psql(f"SELECT nextval('canopy.change_seq')"))
    psql(f"SELECT setval('canopy.change_seq', {start + records + 1})")
    position = start

    def rows():
        nonlocal position
        buffer = io.StringIO()
        for zone_index, size in enumerate(sizes):
            zone_id, owner = zone_ids[zone_index], zone_owner[zone_index]
            writer = names[str(owner)]
            for number in range(size):
                position += 1
                parent = f"f{number - number % 10}" if number % 10 in (1, 2, 3) else "\\N"
                fields = fast_fields(number)
                buffer.write(f"{zone_id}\t{owner}\tf{number}\tFast\t{fields}\t{parent}\t{position}\t{position:x}\t"
                             f"{owner}\t{owner}\t{writer}\t{writer}\n")
                if buffer.tell() > 8_000_000:
                    yield buffer.getvalue()
                    buffer = io.StringIO()
        yield buffer.getvalue()

    psql_stdin("COPY canopy.records (zone_id, owner_id, record_name, record_type, fields, parent_name, change_seq, change_tag, "
               "created_by, modified_by, created_by_name, modified_by_name) FROM STDIN", rows())

    # Shares: 25% of zones zone-wide, 12% record-hierarchy (rooted at f0,
    # whose children f1-f3 join it); never both kinds in one zone. Enough
    # (1,110 with 1,000 owners) for the benchmark's guest to accept 1,000.
    order = list(range(zone_count))
    rng.shuffle(order)
    zone_shared = order[:zone_count // 4]
    record_shared = [index for index in order[zone_count // 4:] if sizes[index] >= 4][:zone_count * 12 // 100]
    share_rows = io.StringIO()
    for number, index in enumerate(zone_shared):
        public = "READ_ONLY" if number % 5 == 0 else "NONE"
        share_rows.write(f"{zone_ids[index]}\t{zone_owner[index]}\t\\N\tShared zone {index}\t{public}\n")
    psql_stdin("COPY canopy.shares (zone_id, owner_id, root_record_id, title, public_permission) FROM STDIN", share_rows.getvalue())
    zone_list = ",".join(str(zone_ids[index]) for index in record_shared) or "0"
    psql(f"""
        SET session_replication_role = replica;
        INSERT INTO canopy.shares (zone_id, owner_id, root_record_id, title, public_permission)
        SELECT r.zone_id, r.owner_id, r.id, 'Shared ' || r.record_name, 'NONE'
          FROM canopy.records r WHERE r.zone_id IN ({zone_list}) AND r.record_name = 'f0';
        UPDATE canopy.records c SET share_id = s.id
          FROM canopy.shares s JOIN canopy.records root ON root.id = s.root_record_id
         WHERE c.zone_id = s.zone_id AND (c.id = root.id OR c.parent_name = root.record_name)
           AND s.zone_id IN ({zone_list});
        -- The URL tokens' rows, which the shares' trigger writes
        -- (migrations/0041): not with triggers off.
        INSERT INTO canopy.share_tokens (url_token, owner_id, share_id)
        SELECT url_token, owner_id, id FROM canopy.shares ON CONFLICT DO NOTHING;
        """)

    # Participants: the owner, then two to five invitations from other
    # owners (a few by email alone, not yet matched to a user).
    shares = [line.split("|") for line in psql(
        f"SELECT s.id || '|' || z.owner_id || '|' || s.public_permission FROM canopy.shares s "
        f"JOIN canopy.zones z ON z.id = s.zone_id "
        f"WHERE z.owner_id BETWEEN {first_user} AND {first_user + owners - 1} ORDER BY s.id").splitlines()]
    participant_rows = io.StringIO()
    invitation = 0
    for share_id, owner, public in shares:
        share_id, owner = int(share_id), int(owner)
        participant_rows.write(f"{share_id}\t{owner}\t{owner}\t\\N\tOWNER\tREAD_WRITE\tACCEPTED\n")
        # Guests come mostly from the first 200 owners: some users are in many shares.
        for guest in rng.sample([user for user in user_ids[:200] if user != owner], rng.randint(2, 5)):
            role, permission, status = INVITATIONS[invitation % len(INVITATIONS)]
            invitation += 1
            if role == "PUBLIC_USER" and public == "NONE":
                role = "PRIVATE_USER"     # only a public share has users who came by its URL alone
            if invitation % 11 == 0 and role != "PUBLIC_USER":
                participant_rows.write(f"{share_id}\t{owner}\t\\N\tinvitee{invitation}@elsewhere.example\t{role}\t{permission}\tPENDING\n")
                status = "PENDING"
            else:
                participant_rows.write(f"{share_id}\t{owner}\t{guest}\t\\N\t{role}\t{permission}\t{status}\n")
    psql_stdin("COPY canopy.participants (share_id, owner_id, user_id, email, role, permission, status) FROM STDIN",
               participant_rows.getvalue())
    psql("SET session_replication_role = replica; UPDATE canopy.participants SET accepted_at = invited_at "
         "WHERE status = 'ACCEPTED' AND accepted_at IS NULL")
    refresh_derived(psql)
    participants = int(psql("SELECT count(*) FROM canopy.participants"))
    return {"owners": owners, "zones": zone_count, "records": records, "largest_zone": max(sizes),
            "zone_shares": len(zone_shared), "record_shares": len(record_shared),
            "participants": participants, "seconds": time.monotonic() - started}


def join_shares(psql, user_id, count, seed=11):
    """Makes `user_id` an accepted participant (READ_ONLY) of `count` of the
    population's shares, so its row-level security checks walk a member's
    realistic list of shares."""
    psql(f"""
        SET session_replication_role = replica;
        INSERT INTO canopy.participants (share_id, owner_id, user_id, role, permission, status, accepted_at)
        SELECT s.id, s.owner_id, {user_id}, 'PRIVATE_USER', 'READ_ONLY', 'ACCEPTED', now()
          FROM canopy.shares s JOIN canopy.zones z ON z.id = s.zone_id
         WHERE z.name LIKE 'Zone%' AND z.owner_id <> {user_id}
         ORDER BY hashint4(s.id::int + {seed}) LIMIT {count}
        ON CONFLICT DO NOTHING;
        """)
    refresh_derived(psql)


def refresh_derived(psql):
    """What the triggers would have kept, for rows loaded with them off:
    shares' participant counts and canopy.memberships, which row-level
    security reads."""
    recount_participants(psql)
    psql("SELECT canopy.rebuild_memberships()")


def recount_participants(psql):
    """shares.participant_count as the participants_count trigger keeps it
    (everyone but the owner and those REMOVED), for rows loaded without it."""
    psql("""
        SET session_replication_role = replica;
        UPDATE canopy.shares s SET participant_count = c.n
          FROM (SELECT share_id, count(*) AS n FROM canopy.participants
                 WHERE role <> 'OWNER' AND status <> 'REMOVED' GROUP BY share_id) c
         WHERE c.share_id = s.id AND s.participant_count <> c.n;
        """)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--owners", type=int, default=1000)
    parser.add_argument("--records", type=int, default=100_000)
    options = parser.parse_args()
    cluster = Cluster()
    print(json.dumps(seed_population(cluster.psql, cluster.copy_in, options.owners, options.records)))


if __name__ == "__main__":
    main()
