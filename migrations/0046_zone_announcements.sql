-- 0046: the transaction that last changed a zone, by Citus's distributed
-- transaction number (issue 67; DECISIONS 163, 172).
--
-- On Citus a record's trigger runs on its shard's worker, and a worker may
-- not NOTIFY in a transaction the coordinator prepares (two nodes
-- written). So there canopy.touch_zone stamps the zone it changes with the
-- distributed transaction's number, the same on every node of one
-- transaction, and the gateway ends each write with
-- canopy.announce_changes, which reads the zones stamped by its own
-- transaction, by their owners, and NOTIFYs on the coordinator. On one
-- PostgreSQL the column stays NULL: the triggers NOTIFY themselves.
--
-- No index: the announcement reads a few owners' zones by owner, and an
-- index on the column would make every zone touch an update of all its
-- indexes (no HOT update).
SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.zones ADD COLUMN IF NOT EXISTS announce_txn bigint;

COMMENT ON COLUMN canopy.zones.announce_txn IS
    'Citus: the distributed transaction number of the last transaction that changed the zone (canopy.touch_zone), which canopy.announce_changes reads to NOTIFY from the coordinator (DECISIONS 172). NULL on one PostgreSQL.';
