#!/usr/bin/env python3
"""Two deliverers on each given node claim the push outbox at once, each in a
transaction held open (so their row locks stand), through the node's own
o.claim_push_outbox_here (outbox-claim.sql, loaded first). Every row must be
claimed once, by one deliverer, and none left unclaimed.
  outbox-claim.py PORT [PORT...]   (the workers' ports on 127.0.0.1, database lab)
"""
import sys
import psycopg

nodes = sys.argv[1:] or sys.exit(__doc__)
conns = [psycopg.connect(f"host=127.0.0.1 port={p} user=postgres dbname=lab") for p in nodes for _ in range(2)]
claimed = [[tuple(r) for r in c.execute("SELECT owner_id, id FROM o.claim_push_outbox_here(80, '1 min')")] for c in conns]
rows = [r for each in claimed for r in each]
for c in conns:
    c.commit()
with psycopg.connect(f"host=127.0.0.1 port={nodes[0]} user=postgres dbname=lab") as c:
    left, total = c.execute("SELECT count(*) FILTER (WHERE claimed_until IS NULL), count(*) FROM o.push_outbox").fetchone()
print(f"claimed by each deliverer: {[len(each) for each in claimed]}; {len(rows)} claims, {len(set(rows))} rows, of {total}; {left} unclaimed")
sys.exit(0 if len(rows) == len(set(rows)) == total and left == 0 else 1)
