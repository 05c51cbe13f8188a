-- modifyRecords: canopy.modify_records, saves and deletes in one zone as
-- the caller, under row-level security.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0005, 0006 and 0010, and (0030) its own earlier
-- jsonb-returning definition.

SET LOCAL ROLE canopy_owner;

-- modifyRecords: saves and deletes in one zone, each record on its own
-- (a subtransaction), as the caller: row-level security decides what may be
-- written. Returns {"saved": [ids in order], "deleted": [names],
-- "errors": [{"recordName", "sqlstate" or "code", "message", "serverRecordId"}]}.
-- The gateway maps SQLSTATEs to API codes, and rolls the whole transaction
-- back when an atomic batch has errors. Saves arrive parents first.
--
-- modifyRecords, as in 0005, but a participant deleting the root of a share
-- they accepted, in SHARED scope, leaves the share (docs/API.md §1).
--
-- modifyRecords (0006) with a fast path: a batch of new records without
-- parents or change tags is one INSERT … SELECT. If that statement fails
-- for any record, it is rolled back and the batch goes one record at a
-- time, as before, so each failure is named.
--
-- For the public database (migrations/0025): a save refused by the row's
-- policies is PERMISSION_FAILURE naming the record and its type, and a
-- record that exists but that the caller may not change, readable or not,
-- is PERMISSION_FAILURE rather than a clash of names.
--
-- For CloudKit Web Services (issue 37): a save may carry its own
-- "savePolicy", over the batch's p_policy (Web Services' operation types
-- differ record by record), and the policy IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS
-- checks the tag and merges the given keys (Web Services' `update`).
-- p_delete_tags ({recordName: recordChangeTag}) deletes those records only
-- at that tag, else SERVER_RECORD_CHANGED (Web Services' `delete`). The
-- four-argument version before it is dropped.
--
-- Issue 51 (migrations/0030): it answers rows, not one jsonb. The first row
-- is (outcome, NULL), the outcome as before; then (NULL, record) for every
-- record saved, in batch order, and for every conflict's server record, as
-- the statement wrote them (after the BEFORE triggers: tag, stamps, names,
-- assets attached). The gateway renders them in the same statement instead
-- of reading them back under the zone's lock. Rows are only added for a
-- record whose subtransaction succeeded (PL/pgSQL variables are not rolled
-- back), and returned only at the end. The fast path no longer probes the
-- batch's names first: the unique index does, as the INSERT runs.
--
-- The zone's owner is an argument (DECISIONS 168): every statement here
-- names it, so on Citus, where the gateway's statement runs as one
-- shard's task, each is a lookup of that owner's co-located shards. NULL
-- (a gateway older than the argument) reads it from the zone.
DROP FUNCTION IF EXISTS canopy.modify_records(bigint, jsonb, text[], text);
DROP FUNCTION IF EXISTS canopy.modify_records(bigint, jsonb, text[], text, jsonb);
CREATE OR REPLACE FUNCTION canopy.modify_records(p_zone_id bigint, p_saves jsonb, p_deletes text[], p_policy text,
                                                 p_delete_tags jsonb DEFAULT '{}', p_owner_id bigint DEFAULT NULL)
    RETURNS TABLE (outcome jsonb, rec canopy.records)
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    save jsonb;
    name text;
    existing canopy.records;
    written canopy.records;
    saved_rows canopy.records[] := '{}';
    server_rows canopy.records[] := '{}';
    saved_id bigint;
    new_fields jsonb;
    saved bigint[] := '{}';
    deleted text[] := '{}';
    errors jsonb := '[]';
    failure jsonb;
    written_together boolean := false;
    was_there boolean := false;
    policy text;
    delete_tag text;
    -- The zone's owner, which every record written carries (migrations/0039):
    -- given here, so the a_owner_id trigger has nothing to do. NULL for a
    -- zone the caller cannot see, whose writes row-level security refuses.
    zone_owner bigint := coalesce(p_owner_id, (SELECT z.owner_id FROM canopy.zones z WHERE z.id = p_zone_id));
BEGIN
    IF jsonb_array_length(p_saves) > 1
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_saves) s
                        WHERE s.value->>'parent' IS NOT NULL OR s.value->>'recordChangeTag' IS NOT NULL)
       THEN
        -- No probe for names that exist first (issue 51): the INSERT's own
        -- unique index finds a clash, at the first such row, and the batch
        -- goes one record at a time, where each clash is named.
        BEGIN
            WITH input AS (
                SELECT e.value AS save, e.position FROM jsonb_array_elements(p_saves) WITH ORDINALITY e(value, position)
            ), inserted AS (
                INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, fields)
                SELECT p_zone_id, zone_owner, input.save->>'recordName', input.save->>'recordType', input.save->'fields'
                  FROM input ORDER BY input.position
                RETURNING *
            )
            SELECT array_agg(inserted.id ORDER BY input.position),
                   array_agg(inserted::canopy.records ORDER BY input.position) INTO saved, saved_rows
              FROM inserted JOIN input ON input.save->>'recordName' = inserted.record_name;
            written_together := cardinality(saved) = jsonb_array_length(p_saves);
            IF NOT written_together THEN
                RAISE EXCEPTION 'not every record was written' USING ERRCODE = 'CN000';
            END IF;
        EXCEPTION WHEN OTHERS THEN
            saved := '{}';
            saved_rows := '{}';
            written_together := false;
        END;
    END IF;

    FOR save IN SELECT value FROM jsonb_array_elements(p_saves) WHERE NOT written_together LOOP
        name := save->>'recordName';
        policy := coalesce(save->>'savePolicy', p_policy);
        failure := NULL;
        BEGIN
            SELECT * INTO existing
              FROM canopy.records WHERE zone_id = p_zone_id AND owner_id = zone_owner AND record_name = name FOR UPDATE;
            was_there := existing.id IS NOT NULL;
            IF save->>'parent' IS NOT NULL AND save->>'parent' <> name AND NOT EXISTS (
                SELECT 1 FROM canopy.records WHERE zone_id = p_zone_id AND owner_id = zone_owner AND record_name = save->>'parent'
            ) THEN
                failure := jsonb_build_object('code', 'REFERENCE_VIOLATION',
                    'message', format('parent %s does not exist in the zone', save->>'parent'));
            ELSIF existing.id IS NULL THEN
                -- FOR UPDATE also applies the UPDATE policies: a record the
                -- caller may read but not change is hidden from it.
                -- (With or without a tag: in the public database a record
                -- of another's that the caller may read is one it may not
                -- change, and saving it as new must not look like a clash.)
                IF EXISTS (
                    SELECT 1 FROM canopy.records WHERE zone_id = p_zone_id AND owner_id = zone_owner AND record_name = name
                ) THEN
                    failure := jsonb_build_object('code', 'PERMISSION_FAILURE',
                        'message', format('you may not change record %s', name));
                ELSIF save->>'recordChangeTag' IS NOT NULL THEN
                    failure := jsonb_build_object('code', 'UNKNOWN_ITEM',
                        'message', format('record %s does not exist (it was saved with a change tag)', name));
                ELSE
                    INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, fields, parent_name)
                    VALUES (p_zone_id, zone_owner, name, save->>'recordType', save->'fields', save->>'parent')
                    RETURNING * INTO written;
                    saved_id := written.id;
                END IF;
            ELSIF existing.record_type <> save->>'recordType' THEN
                failure := jsonb_build_object('code', 'INVALID_ARGUMENTS',
                    'message', format('record %s is of type %s, not %s', name, existing.record_type, save->>'recordType'));
            ELSIF policy IN ('IF_SERVER_RECORD_UNCHANGED', 'IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS')
                  AND (save->>'recordChangeTag') IS DISTINCT FROM existing.change_tag THEN
                failure := jsonb_build_object('code', 'SERVER_RECORD_CHANGED', 'serverRecordId', existing.id,
                    'message', CASE WHEN save->>'recordChangeTag' IS NULL
                        THEN format('record %s exists: save it with its recordChangeTag', name)
                        ELSE format('record %s changed on the server since tag %s', name, save->>'recordChangeTag') END);
            ELSE
                new_fields := CASE WHEN policy IN ('CHANGED_KEYS', 'IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS')
                    THEN jsonb_strip_nulls(existing.fields || (save->'fields'))
                    ELSE save->'fields' END;
                UPDATE canopy.records SET fields = new_fields, parent_name = save->>'parent'
                 WHERE id = existing.id AND owner_id = zone_owner
                RETURNING * INTO written;
                saved_id := written.id;
                IF saved_id IS NULL THEN
                    failure := jsonb_build_object('code', 'PERMISSION_FAILURE',
                        'message', format('you may not change record %s', name));
                END IF;
            END IF;
        EXCEPTION
            WHEN insufficient_privilege THEN   -- row-level security refused the row
                failure := jsonb_build_object('code', 'PERMISSION_FAILURE',
                    'message', CASE WHEN was_there THEN format('you may not change record %s', name)
                                    ELSE format('you may not create record %s (a %s) here', name, save->>'recordType') END);
            WHEN unique_violation THEN         -- it exists, and the caller may not even read it
                failure := jsonb_build_object('code', 'PERMISSION_FAILURE',
                    'message', format('you may not change record %s', name));
            WHEN OTHERS THEN
                failure := jsonb_build_object('sqlstate', SQLSTATE, 'message', SQLERRM);
        END;
        IF failure IS NULL THEN
            saved := saved || saved_id;
            saved_rows := saved_rows || written;
        ELSE
            errors := errors || (failure || jsonb_build_object('recordName', name));
            IF failure ? 'serverRecordId' THEN
                server_rows := server_rows || existing;
            END IF;
        END IF;
        saved_id := NULL;
        written := NULL;
        existing := NULL;
        was_there := false;
    END LOOP;

    FOREACH name IN ARRAY coalesce(p_deletes, '{}') LOOP
        failure := NULL;
        delete_tag := p_delete_tags->>name;
        BEGIN
            IF delete_tag IS NOT NULL THEN
                SELECT * INTO existing
                  FROM canopy.records WHERE zone_id = p_zone_id AND owner_id = zone_owner AND record_name = name;
                IF existing.id IS NOT NULL AND existing.change_tag IS DISTINCT FROM delete_tag THEN
                    failure := jsonb_build_object('code', 'SERVER_RECORD_CHANGED', 'serverRecordId', existing.id,
                        'message', format('record %s changed on the server since tag %s', name, delete_tag));
                END IF;
            END IF;
            IF failure IS NULL THEN
                DELETE FROM canopy.records WHERE zone_id = p_zone_id AND owner_id = zone_owner AND record_name = name
                   AND (delete_tag IS NULL OR change_tag = delete_tag) RETURNING id INTO saved_id;
            END IF;
            IF failure IS NULL AND saved_id IS NULL AND EXISTS (
                SELECT 1 FROM canopy.records r WHERE r.zone_id = p_zone_id AND r.owner_id = zone_owner AND r.record_name = name
                   AND r.id = ANY (canopy.member_root_record_ids())
            ) THEN
                -- A participant deleting the root of a share they accepted
                -- leaves the share; the owner's records are untouched.
                PERFORM canopy.leave_shares(p_zone_id, name);
                saved_id := 0;
            END IF;
            IF failure IS NULL AND saved_id IS NULL THEN
                IF EXISTS (SELECT 1 FROM canopy.records WHERE zone_id = p_zone_id AND owner_id = zone_owner AND record_name = name) THEN
                    failure := jsonb_build_object('code', 'PERMISSION_FAILURE', 'message', format('you may not delete record %s', name));
                ELSE
                    failure := jsonb_build_object('code', 'UNKNOWN_ITEM', 'message', format('record %s does not exist', name));
                END IF;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            failure := jsonb_build_object('sqlstate', SQLSTATE, 'message', SQLERRM);
        END;
        IF failure IS NULL THEN
            deleted := deleted || name;
        ELSE
            errors := errors || (failure || jsonb_build_object('recordName', name));
            IF failure ? 'serverRecordId' THEN
                server_rows := server_rows || existing;
            END IF;
        END IF;
        saved_id := NULL;
        existing := NULL;
    END LOOP;
    outcome := jsonb_build_object('saved', to_jsonb(saved), 'deleted', to_jsonb(deleted), 'errors', errors);
    rec := NULL;
    RETURN NEXT;
    outcome := NULL;
    FOREACH rec IN ARRAY saved_rows || server_rows LOOP
        RETURN NEXT;
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION canopy.modify_records(bigint, jsonb, text[], text, jsonb, bigint) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.modify_records(bigint, jsonb, text[], text, jsonb, bigint) TO canopy_gateway;
