-- Record-rooted share membership (records.share_id):
-- canopy.propagate_share, called by the records and shares triggers.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0003.

SET LOCAL ROLE canopy_owner;

-- Hierarchy membership (records.share_id).
--
-- A record-rooted share covers its root and every record whose parent chain
-- reaches the root. Instead of walking that chain on every read, each record
-- carries the id of the share that covers it, and writes keep it current:
--   * records_before_write sets share_id of the row being written from its
--     parent (or to its own share if it is a root) when it is inserted or its
--     parent changes, and refuses parent cycles;
--   * records_after_write then pushes the value down the subtree below the
--     record (canopy.propagate_share), which also attaches records that were
--     dangling under this name and detaches the subtree of a deleted record;
--   * creating a share sets share_id on the root's subtree; deleting it
--     clears share_id in shares_before_delete (sql/triggers/shares.sql;
--     a SET NULL foreign key until migrations/0040).
-- A read therefore tests membership with `share_id = ANY(...)`, one indexed
-- comparison. Moving a subtree costs one recursive walk of that subtree.

-- Sets share_id := p_share_id on every record below (zone, name), stopping at
-- roots of other shares. A share root can never end up inside another share:
-- that is ALREADY_SHARED. p_owner_id is the zone's owner (migrations/0039):
-- every lookup carries it, so on Citus it stays on the zone's shard. The
-- version without it is dropped.
DROP FUNCTION IF EXISTS canopy.propagate_share(bigint, text, bigint);
CREATE OR REPLACE FUNCTION canopy.propagate_share(p_zone_id bigint, p_owner_id bigint, p_record_name text, p_share_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ids bigint[];
    names text[];
    nested text;
BEGIN
    -- By EXECUTE … USING, the arguments bound as values: on Citus this runs
    -- in a record's shard's task (the records' triggers), where a query
    -- over PL/pgSQL variables plans only as one table's plain lookup.
    EXECUTE 'WITH RECURSIVE sub (id, record_name, is_root) AS (
                 SELECT r.id, r.record_name, EXISTS (SELECT 1 FROM canopy.shares s WHERE s.owner_id = $1 AND s.root_record_id = r.id)
                   FROM canopy.records r
                  WHERE r.owner_id = $1 AND r.zone_id = $2 AND r.parent_name = $3 AND r.record_name <> $3
                 UNION
                 SELECT r.id, r.record_name, EXISTS (SELECT 1 FROM canopy.shares s WHERE s.owner_id = $1 AND s.root_record_id = r.id)
                   FROM canopy.records r
                   JOIN sub ON r.owner_id = $1 AND r.zone_id = $2 AND r.parent_name = sub.record_name AND NOT sub.is_root
             )
             SELECT coalesce(array_agg(id), ''{}''), coalesce(array_agg(record_name), ''{}'')
               FROM sub WHERE NOT is_root'
        INTO ids, names
        USING p_owner_id, p_zone_id, p_record_name;

    IF p_share_id IS NOT NULL THEN
        EXECUTE 'SELECT r.record_name
                   FROM canopy.records r
                   JOIN canopy.shares s ON s.owner_id = $1 AND s.root_record_id = r.id
                  WHERE r.owner_id = $1 AND r.zone_id = $2 AND r.parent_name = ANY ($3) AND s.id <> $4
                  LIMIT 1'
            INTO nested
            USING p_owner_id, p_zone_id, names || p_record_name, p_share_id;
        IF nested IS NOT NULL THEN
            RAISE EXCEPTION 'record % is the root of another share and cannot be inside this one', nested
                USING ERRCODE = 'CN002';
        END IF;
    END IF;

    IF cardinality(ids) > 0 THEN
        EXECUTE 'UPDATE canopy.records r SET share_id = $3
                  WHERE r.owner_id = $1 AND r.id = ANY ($2) AND r.share_id IS DISTINCT FROM $3'
            USING p_owner_id, ids, p_share_id;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION canopy.propagate_share(bigint, bigint, text, bigint) FROM PUBLIC, canopy_gateway;
