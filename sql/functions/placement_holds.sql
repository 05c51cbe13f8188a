-- A write transaction's hold on its zones' owners' shards, on Citus
-- (DECISIONS 180): canopy.hold_placements.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- Why: the gateway sends most of a write as one statement that Citus routes
-- whole to the worker holding the owner's shards, where PL/pgSQL
-- (modify_records, the triggers, the policies' probes) runs the rest as
-- nested statements. A shard move (`shard_transfer_mode => 'block_writes'`,
-- docs/DEPLOYMENT.md) blocks those nested writes while it copies; when it
-- commits they resume and are planned anew, on the shard's new node, by a
-- statement that began on the old one: its reads and row locks were taken on
-- the old placement, and the worker's connection to the new node does not
-- carry the transaction's SET LOCALs (canopy.user_id), so the row-level
-- security there saw nobody and refused the save (CitusShardMoveTests).
-- Citus's own routed modifications hold a share lock on the shards'
-- placement metadata from the coordinator for the rest of the transaction,
-- which a move's exclusive lock waits for; a routed SELECT that writes inside
-- functions takes none. This takes the same lock, on the coordinator, before
-- the transaction's first statement naming those owners: a move then waits
-- for the write transactions under way, and a write transaction that starts
-- during a move waits for it and runs wholly on the new placement.
--
-- * One lock per owner's shard group: Citus keys the lock by the
--   co-location group and the shard's index, so the zones shard stands for
--   every co-located table's shard of that owner. Taken in shard order, as
--   Citus's own locks are.
-- * Only shares: writes do not wait for each other here (their row locks
--   order them), only for a move, rebalance, drain or tenant isolation.
-- * SECURITY DEFINER: lock_shard_metadata is the tables' owner's; it says
--   which placements, not which rows, so it reveals and permits nothing.
-- * On one PostgreSQL, or with the tables not distributed, it does nothing
--   (the gateway calls it on Citus only; accept_share and
--   request_share_access on both engines, DECISIONS 184).

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.hold_placements(p_owner_ids bigint[]) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shards bigint[];
BEGIN
    -- Two steps: PL/pgSQL plans a condition whole, and on one PostgreSQL
    -- pg_dist_partition does not exist (accept_share calls this on both
    -- engines since DECISIONS 184).
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid = pg_catalog.to_regclass('canopy.zones') AND partmethod = 'h') THEN
        RETURN;
    END IF;
    EXECUTE 'SELECT pg_catalog.array_agg(s ORDER BY s)
               FROM (SELECT DISTINCT pg_catalog.get_shard_id_for_distribution_column(''canopy.zones'', o) AS s
                       FROM pg_catalog.unnest($1) AS o WHERE o IS NOT NULL) AS shards'
       INTO shards USING p_owner_ids;
    IF shards IS NOT NULL THEN
        -- 5: ShareLock.
        EXECUTE 'SELECT pg_catalog.lock_shard_metadata(5, $1)' USING shards;
    END IF;
END
$$;
COMMENT ON FUNCTION canopy.hold_placements(bigint[]) IS 'On Citus, holds these owners'' shards where they are until the transaction ends: a shard move waits for it, and it waits for a move under way (DECISIONS 180). Does nothing on one PostgreSQL.';

REVOKE ALL ON FUNCTION canopy.hold_placements(bigint[]) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.hold_placements(bigint[]) TO canopy_gateway;
