-- moveRecords (issue 38, docs/API.md §17; past CloudKit): canopy.move_records.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- A move is an UPDATE of records.zone_id, run as the caller: the records
-- policy's USING clause asks for write access to the record where it is,
-- and its WITH CHECK clause for write access to it where it goes, so
-- row-level security alone says who may move what. Keeping the row keeps
-- the record: its recordName, its created stamp and its assets (which live
-- in its fields). records_before_write (sql/triggers/records.sql) lets a
-- zone change only inside this function, touches both zones, writes a
-- tombstone in the source zone and gives the record a new
-- position in the target's feed, so every client sees a deletion there and
-- a new record here without knowing about moves.
--
-- SQLSTATEs: CN004 INVALID_ARGUMENTS, CN005 PERMISSION_FAILURE.

SET LOCAL ROLE canopy_owner;

-- Moves the records named (and, with p_with_descendants, every record below
-- them by parent) from zone p_from to zone p_to, in one statement a level
-- of the hierarchy, so each record's share is computed from a parent that
-- has already arrived. The records named whose parent does not move with
-- them get p_parent as their parent in the target (NULL: none).
--
-- Returns a row per record: (name, NULL, NULL) for each moved, or, when
-- anything is refused, only the refusals (name, code, message) and nothing
-- is moved: a name not in the source zone (UNKNOWN_ITEM), a name the target
-- zone already has (SERVER_RECORD_CHANGED), a share's root
-- (ALREADY_SHARED), a name the target zone holds that the caller cannot
-- see (PERMISSION_FAILURE, as modifyRecords answers a save onto it).
-- Writing where the caller may not is CN005.
--
-- Since DECISIONS 171 (supersedes the 5-argument version, dropped here):
-- given both zones' owners, by which every table is read; the triggers'
-- flags by SET LOCAL; on Citus only between zones of one owner.
DROP FUNCTION IF EXISTS canopy.move_records(bigint, bigint, text[], boolean, text);
CREATE OR REPLACE FUNCTION canopy.move_records(
    p_from bigint, p_to bigint, p_names text[], p_with_descendants boolean, p_parent text,
    p_from_owner bigint DEFAULT NULL, p_to_owner bigint DEFAULT NULL
) RETURNS TABLE (record_name text, code text, message text)
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    moving text[];
    level text[];
    depth integer := 0;
    touched integer;
    total integer := 0;
    from_owner bigint := p_from_owner;
    to_owner bigint := p_to_owner;
    move_level text;
    refused boolean := false;
    one text;
    clashing text[] := '{}';
BEGIN
    IF p_from = p_to THEN
        RAISE EXCEPTION 'the records are already in that zone' USING ERRCODE = 'CN004';
    END IF;
    -- The zones' owners, as the caller sees them (the planner's zone CTEs
    -- give them; NULL, from an older gateway: the zones' rows say). A
    -- target the caller cannot see has none: the records keep theirs, and
    -- the UPDATE is then refused by the records policy.
    IF from_owner IS NULL THEN
        SELECT z.owner_id INTO from_owner FROM canopy.zones z WHERE z.id = p_from;
    END IF;
    IF to_owner IS NULL THEN
        SELECT z.owner_id INTO to_owner FROM canopy.zones z WHERE z.id = p_to;
    END IF;
    IF from_owner = 0 OR to_owner = 0 THEN
        RAISE EXCEPTION 'records move between zones of the private and shared databases, not the public one' USING ERRCODE = 'CN004';
    END IF;
    -- On Citus a record lives on its owner's shard, and Citus cannot change
    -- the owner a row is placed by (DECISIONS 171).
    IF canopy.citus_node() <> 'single' AND from_owner IS DISTINCT FROM to_owner THEN
        RAISE EXCEPTION 'on this server (Citus) records move only between zones of one owner' USING ERRCODE = 'CN004';
    END IF;

    -- Both zones' locks first, in id order: every writer of a zone takes
    -- its lock before any record's (modifyRecords through this same
    -- function), so moves and saves queue rather than deadlock, and the
    -- moving set read next cannot change under the move.
    IF p_from < p_to THEN
        PERFORM canopy.lock_zone_for_write(p_from, from_owner);
        PERFORM canopy.lock_zone_for_write(p_to, to_owner);
    ELSE
        PERFORM canopy.lock_zone_for_write(p_to, to_owner);
        PERFORM canopy.lock_zone_for_write(p_from, from_owner);
    END IF;

    -- The moving set, as the caller sees the source zone.
    WITH RECURSIVE below (name) AS (
        SELECT r.record_name FROM canopy.records r
         WHERE r.owner_id = from_owner AND r.zone_id = p_from AND r.record_name = ANY (p_names)
        UNION
        SELECT r.record_name FROM canopy.records r
          JOIN below ON r.owner_id = from_owner AND r.zone_id = p_from AND r.parent_name = below.name
         WHERE p_with_descendants
    )
    SELECT coalesce(array_agg(name), '{}') INTO moving FROM below;

    RETURN QUERY
        SELECT n, 'UNKNOWN_ITEM', format('record %s is not in the source zone', n)
          FROM unnest(p_names) n WHERE NOT (n = ANY (moving))
        UNION ALL
        SELECT t.record_name, 'SERVER_RECORD_CHANGED', format('the target zone already has a record named %s', t.record_name)
          FROM canopy.records t WHERE t.owner_id = to_owner AND t.zone_id = p_to AND t.record_name = ANY (moving)
        UNION ALL
        SELECT r.record_name, 'ALREADY_SHARED',
               format('record %s is the root of a share: delete the share, then move the record', r.record_name)
          FROM canopy.records r JOIN canopy.shares s ON s.owner_id = r.owner_id AND s.root_record_id = r.id
         WHERE r.owner_id = from_owner AND r.zone_id = p_from AND r.record_name = ANY (moving);
    IF FOUND THEN
        RETURN;
    END IF;
    IF p_parent IS NOT NULL AND p_parent = ANY (moving) THEN
        RAISE EXCEPTION 'the new parent % is one of the records being moved', p_parent USING ERRCODE = 'CN004';
    END IF;

    -- One level's move. The owner a row is placed by is set only when it
    -- changes (one PostgreSQL; Citus refuses setting it even to itself).
    move_level := 'UPDATE canopy.records r SET zone_id = $1, '
        || CASE WHEN from_owner IS DISTINCT FROM to_owner THEN 'owner_id = coalesce($2, r.owner_id), ' ELSE '' END
        || 'parent_name = CASE WHEN $3 = 0 THEN $4 ELSE r.parent_name END '
        || 'WHERE r.owner_id = $5 AND r.zone_id = $6 AND r.record_name = ANY ($7)';

    -- The target may hold a name the caller cannot see (a record of the
    -- owner's zone outside the caller's share): the check above, run under
    -- row-level security, misses it and the UPDATE meets the unique key.
    -- Then every level's move is undone (the block's subtransaction), the
    -- level that met it is tried a record at a time to name the clashes,
    -- and those are refused as modifyRecords refuses a save onto such a
    -- name (PERMISSION_FAILURE), with nothing moved (issue 48).
    BEGIN
        -- What records_before_write lets through, for this transaction.
        -- SET LOCAL, not set_config: Citus carries SET LOCAL to the workers,
        -- where the records' triggers run (DECISIONS 171).
        SET LOCAL canopy.moving_records = 'y';
        IF p_with_descendants THEN
            SET LOCAL canopy.moving_subtrees = 'y';
        ELSE
            SET LOCAL canopy.moving_subtrees = 'n';
        END IF;
        level := ARRAY(SELECT r.record_name FROM canopy.records r
                        WHERE r.owner_id = from_owner AND r.zone_id = p_from AND r.record_name = ANY (moving)
                          AND (r.parent_name IS NULL OR NOT (r.parent_name = ANY (moving))));
        WHILE cardinality(level) > 0 LOOP
            BEGIN
                EXECUTE move_level USING p_to, to_owner, depth, p_parent, from_owner, p_from, level;
            EXCEPTION WHEN unique_violation THEN
                FOREACH one IN ARRAY level LOOP
                    BEGIN
                        EXECUTE move_level USING p_to, to_owner, depth, p_parent, from_owner, p_from, ARRAY[one];
                    EXCEPTION WHEN unique_violation THEN
                        clashing := clashing || one;
                    END;
                END LOOP;
                RAISE EXCEPTION 'names taken in the target zone' USING ERRCODE = 'CN099';
            END;
            GET DIAGNOSTICS touched = ROW_COUNT;
            total := total + touched;
            IF touched < cardinality(level) THEN
                refused := true;
                EXIT;
            END IF;
            level := ARRAY(SELECT r.record_name FROM canopy.records r
                            WHERE r.owner_id = from_owner AND r.zone_id = p_from AND r.parent_name = ANY (level)
                              AND r.record_name = ANY (moving));
            depth := depth + 1;
        END LOOP;
        SET LOCAL canopy.moving_records = 'n';
    EXCEPTION WHEN SQLSTATE 'CN099' THEN
        RETURN QUERY SELECT c, 'PERMISSION_FAILURE', format('you may not change record %s', c)
          FROM unnest(clashing) c ORDER BY c;
        RETURN;
    END;
    IF refused OR total <> cardinality(moving) THEN
        RAISE EXCEPTION 'you may not move these records: moving needs write access to them where they are and where they go'
            USING ERRCODE = 'CN005';
    END IF;
    RETURN QUERY SELECT m, NULL::text, NULL::text FROM unnest(moving) m ORDER BY m;
END
$$;

REVOKE ALL ON FUNCTION canopy.move_records(bigint, bigint, text[], boolean, text, bigint, bigint) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.move_records(bigint, bigint, text[], boolean, text, bigint, bigint) TO canopy_gateway;
