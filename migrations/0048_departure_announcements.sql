-- 0048: a zone's departures carry the transaction that wrote them, for the
-- coordinator's announcement on Citus (issue 67; DECISIONS 172, 186).
--
-- On Citus a worker does not NOTIFY in a transaction the coordinator
-- prepares, so the coordinator announces each write's zones at its end
-- (canopy.announce_changes), finding them by the stamp canopy.touch_zone
-- wrote on their rows (zones.announce_txn, migrations/0046). A zone being
-- deleted has no row left to find when the coordinator looks: its
-- departures (written by zones_before_delete, sql/triggers/zones.sql, on
-- the zone's shard) now carry the same stamp, and announce_changes reads
-- the owner's. NULL on one PostgreSQL, where the trigger NOTIFYs itself,
-- and for departures written before this migration.
--
-- No index: the announcement reads one owner's departures of one
-- transaction, on the owner's shard, which are few; the purge removes old
-- ones (canopy.purge_change_history).

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.zone_departures ADD COLUMN IF NOT EXISTS announce_txn bigint;

COMMENT ON COLUMN canopy.zone_departures.announce_txn IS
    'Citus: the distributed transaction number of the transaction that wrote the departure (a zone deleted), which canopy.announce_changes reads to NOTIFY from the coordinator (DECISIONS 186). NULL on one PostgreSQL.';
