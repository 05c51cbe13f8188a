#!/usr/bin/env python3
"""Is a database feed read by per-owner commit clocks gap-free? (DECISIONS 148)

Loads owner-clock.sql into DSN (a database of its own: it drops schema `c`),
then for SECONDS runs six writers (upserts of 1-3 records into zones of one
owner, or of two owners in one transaction, some holding their transaction
open a moment) beside one reader. The reader makes database-feed passes per
owner as the design says: in one transaction, the owner's clock first, then
the owner's zones whose position is past the token; the clock becomes the
token. Afterwards every committed (owner, position, zone) the trigger logged
must have been reported by the pass whose window holds its position.
--move (Citus) moves the shard holding owner 1 to another worker halfway
through, with writes blocked during the copy: its clock and zones go with it.
--wrong-order reads the zones before the clock (each statement its own
snapshot under READ COMMITTED): it must report misses, which shows the check
can fail.
  owner-clock-race.py DSN [--citus [--move]] [--seconds N] [--wrong-order]
"""
import argparse, pathlib, random, subprocess, sys, threading, time
import psycopg

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("dsn")
parser.add_argument("--citus", action="store_true", help="distribute the tables (the database has the citus extension)")
parser.add_argument("--seconds", type=float, default=30)
parser.add_argument("--wrong-order", action="store_true")
parser.add_argument("--move", action="store_true", help="move owner 1's shard to another worker halfway (needs --citus)")
args = parser.parse_args()
subprocess.run(["psql", "-q", "-v", f"citus={'on' if args.citus else 'off'}", "-d", args.dsn, "-f",
                str(pathlib.Path(__file__).with_name("owner-clock.sql"))], check=True, stdout=subprocess.DEVNULL)
OWNERS = [1, 2, 3]
stop = threading.Event()
errors = []
aborted = []


def writer(i):
    rnd = random.Random(i)
    with psycopg.connect(args.dsn, autocommit=True, application_name=f"w{i}") as c:
        while not stop.is_set():
            try:
                with c.transaction():
                    owners = rnd.sample(OWNERS, 2) if rnd.random() < 0.2 else [rnd.choice(OWNERS)]
                    for o in owners:
                        for _ in range(rnd.randint(1, 3)):
                            c.execute("INSERT INTO c.records VALUES (%s, %s, %s, 'v') ON CONFLICT (owner_id, zone_id, name) DO UPDATE SET v = EXCLUDED.v || 'x'",
                                      (o, o * 10 + rnd.randint(1, 3), f"r{rnd.randint(1, 20)}"))
                    if rnd.random() < 0.3:
                        time.sleep(rnd.random() * 0.02)
            except psycopg.errors.DeadlockDetected:
                pass
            except psycopg.Error as e:
                # Aborted (a shard move may abort a writer's transaction):
                # counted; only what committed is checked.
                aborted.append(repr(e))


passes = []   # (owner, token before, token after, zones reported)


def reader():
    clock_sql = "SELECT position FROM c.owner_clocks WHERE owner_id = %s"
    zones_sql = "SELECT id FROM c.zones WHERE owner_id = %s AND changed_position > %s"
    with psycopg.connect(args.dsn, autocommit=True) as c:
        tokens = {o: 0 for o in OWNERS}
        while not stop.is_set():
            for o in OWNERS:
                with c.transaction():
                    if args.wrong_order:
                        zones = {z for (z,) in c.execute(zones_sql, (o, tokens[o]))}
                        (clock,) = c.execute(clock_sql, (o,)).fetchone()
                    else:
                        (clock,) = c.execute(clock_sql, (o,)).fetchone()
                        zones = {z for (z,) in c.execute(zones_sql, (o, tokens[o]))}
                passes.append((o, tokens[o], clock, zones))
                tokens[o] = clock


threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)] + [threading.Thread(target=reader)]
for t in threads:
    t.start()
moved = ""
if args.move:
    time.sleep(args.seconds / 2)
    with psycopg.connect(args.dsn, autocommit=True) as c:
        (shard,) = c.execute("SELECT get_shard_id_for_distribution_column('c.owner_clocks', 1)").fetchone()
        (host, port) = c.execute("SELECT nodename, nodeport FROM pg_dist_placement JOIN pg_dist_node USING (groupid) WHERE shardid = %s", (shard,)).fetchone()
        (to_host, to_port) = c.execute("SELECT nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND shouldhaveshards AND (nodename, nodeport) <> (%s, %s) ORDER BY nodeport LIMIT 1", (host, port)).fetchone()
        c.execute("SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => 'block_writes')", (shard, host, port, to_host, to_port))
        moved = f", owner 1's shard {shard} moved from port {port} to {to_port}"
    time.sleep(args.seconds / 2)
else:
    time.sleep(args.seconds)
stop.set()
for t in threads:
    t.join()
with psycopg.connect(args.dsn) as c:
    log = c.execute("SELECT owner_id, position, zone_id FROM c.log").fetchall()
last = {}
for o, _, after, _ in passes:
    last[o] = max(last.get(o, 0), after)
windows = {}
for o, before, after, zones in passes:
    windows.setdefault(o, []).append((before, after, zones))
checked = missed = 0
for o, p, z in log:
    if p > last.get(o, 0):
        continue   # committed after the last pass
    checked += 1
    if not any(before < p <= after and z in zones for before, after, zones in windows[o]):
        missed += 1
print(f"{'citus' if args.citus else 'single'}{' (wrong order)' if args.wrong_order else ''}: "
      f"{len(log)} zone changes committed, {checked} before the last pass, {len(passes)} passes, {missed} missed, "
      f"{len(aborted)} writes aborted{moved}{', errors ' + str(errors[:3]) if errors else ''}")
sys.exit(1 if missed or errors else 0)
