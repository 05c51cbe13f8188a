-- The write path, set-based (issue 7, W3; docs/BENCHMARK_NOTES.md).
--
-- Saving a batch of 400 new records cost about 1 ms a record: each record
-- was its own subtransaction and INSERT, and each row ran a dozen queries
-- in its triggers (the zone's lock, the share of a record that cannot be a
-- share root yet, the writer's name, one field_types lookup per field,
-- share propagation to children that cannot have a share, a deferred
-- parent check with no parent). Here:
--
-- * modify_records writes a batch of new records without parents in one
--   INSERT … SELECT. Any failure rolls that statement back and the batch
--   is written one record at a time as before, which names each record's
--   failure: the fast path changes how fast, never what is answered.
-- * Field types are checked once per statement, over the distinct
--   (record type, field, value type) of the rows written (a statement
--   trigger with a transition table), not once per field of every row.
-- * touch_zone remembers, for the transaction, the zones it has touched
--   (a transaction-local setting, reverted with the subtransaction that set
--   it along with the lock). A session connected as canopy_gateway could
--   set it by hand and skip the zone's lock, but such a session can already
--   act as any user (canopy.user_id); this trusts it no further.
-- * The writer's record name is read once per statement and user.
-- * records_after_insert runs only for a record born inside a share, and
--   records_parent_exists only for a record with a parent: for the others
--   they had nothing to do.

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.touch_zone(p_zone_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint;
    touched boolean;
BEGIN
    IF current_setting('canopy.touched_zone_' || p_zone_id, true) = 'y' THEN
        RETURN true;
    END IF;
    SELECT owner_id, changed_xid = pg_current_xact_id() INTO owner, touched
      FROM canopy.zones WHERE id = p_zone_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF NOT touched THEN
        UPDATE canopy.zones SET changed_xid = pg_current_xact_id() WHERE id = p_zone_id;
        PERFORM pg_notify('canopy_changes', p_zone_id || ' ' || owner);
    END IF;
    PERFORM set_config('canopy.touched_zone_' || p_zone_id, 'y', true);
    RETURN true;
END
$$;

-- A zone being deleted is no longer touched: the records it takes with it
-- must find it gone (records_after_write records nothing for them).
CREATE OR REPLACE FUNCTION canopy.zones_before_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM set_config('canopy.touched_zone_' || OLD.id, '', true);
    -- The DELETE holds the zone's row lock already; touching the row being
    -- deleted is not allowed, so write the departures here.
    INSERT INTO canopy.zone_departures (user_id, scope, zone_id, zone_name, owner_id, owner_record_name, change_seq)
    SELECT m.user_id, m.scope, OLD.id, OLD.name, OLD.owner_id, u.record_name, nextval('canopy.change_seq')
      FROM (SELECT OLD.owner_id AS user_id, 'PRIVATE' AS scope
            UNION
            SELECT p.user_id, 'SHARED' FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
             WHERE s.zone_id = OLD.id AND p.status = 'ACCEPTED' AND p.role <> 'OWNER' AND p.user_id IS NOT NULL) m
      JOIN canopy.users u ON u.id = OLD.owner_id          -- none when the owner is being deleted
     WHERE EXISTS (SELECT 1 FROM canopy.users gone WHERE gone.id = m.user_id);
    PERFORM pg_notify('canopy_changes', OLD.id || ' ' || OLD.owner_id);
    RETURN OLD;
END
$$;

-- records_before_write (0007) doing only what a row needs, and naming its
-- writer (was records_check_fields').
CREATE OR REPLACE FUNCTION canopy.records_before_write() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    root_share bigint;
    parent_share bigint;
    ancestor text;
    content_changed boolean;
    writer_name text;
BEGIN
    IF TG_OP = 'UPDATE' AND (NEW.zone_id <> OLD.zone_id OR NEW.record_name <> OLD.record_name) THEN
        RAISE EXCEPTION 'a record''s zone and recordName never change' USING ERRCODE = 'CN004';
    END IF;

    -- Change positions within a zone follow commit order: take them under the
    -- zone's row lock, which a concurrent writer to the same zone waits for.
    IF current_setting('canopy.touched_zone_' || NEW.zone_id, true) IS DISTINCT FROM 'y' THEN
        PERFORM canopy.touch_zone(NEW.zone_id);
    END IF;
    NEW.change_seq := nextval('canopy.change_seq');

    content_changed := TG_OP = 'INSERT'
        OR NEW.fields IS DISTINCT FROM OLD.fields
        OR NEW.record_type IS DISTINCT FROM OLD.record_type
        OR NEW.parent_name IS DISTINCT FROM OLD.parent_name
        OR NEW.share_id IS NOT DISTINCT FROM OLD.share_id;   -- a save of identical content is still a save
    IF content_changed THEN
        NEW.change_tag := to_hex(NEW.change_seq);
        NEW.modified_at := now();
        NEW.modified_by := canopy.current_user_id();
        IF TG_OP = 'INSERT' THEN
            NEW.created_at := NEW.modified_at;
            NEW.created_by := NEW.modified_by;
        ELSE
            NEW.created_at := OLD.created_at;
            NEW.created_by := OLD.created_by;
        END IF;
    END IF;

    IF TG_OP = 'INSERT' OR NEW.modified_by IS DISTINCT FROM OLD.modified_by OR NEW.modified_at <> OLD.modified_at THEN
        IF NEW.modified_by IS NOT NULL THEN
            writer_name := current_setting('canopy.user_record_name_' || NEW.modified_by, true);
            IF writer_name IS NULL OR writer_name = '' THEN
                SELECT record_name INTO writer_name FROM canopy.users WHERE id = NEW.modified_by;
                PERFORM set_config('canopy.user_record_name_' || NEW.modified_by, coalesce(writer_name, ''), true);
            END IF;
        END IF;
        NEW.modified_by_name := nullif(writer_name, '');
        IF TG_OP = 'INSERT' THEN
            NEW.created_by_name := NEW.modified_by_name;
        END IF;
    END IF;

    IF TG_OP = 'INSERT' OR NEW.parent_name IS DISTINCT FROM OLD.parent_name THEN
        IF NEW.parent_name IS NOT NULL THEN
            -- No cycles: walk up from the new parent (writes only, never reads).
            WITH RECURSIVE up (name, depth) AS (
                SELECT NEW.parent_name, 1
                UNION
                SELECT r.parent_name, up.depth + 1
                  FROM canopy.records r JOIN up ON r.zone_id = NEW.zone_id AND r.record_name = up.name
                 WHERE r.parent_name IS NOT NULL AND up.depth < 10000
            )
            SELECT name INTO ancestor FROM up WHERE name = NEW.record_name LIMIT 1;
            IF ancestor IS NOT NULL THEN
                RAISE EXCEPTION 'parent % of record % makes a cycle', NEW.parent_name, NEW.record_name
                    USING ERRCODE = 'CN001';
            END IF;
            SELECT r.share_id INTO parent_share FROM canopy.records r
             WHERE r.zone_id = NEW.zone_id AND r.record_name = NEW.parent_name;
        END IF;

        -- A new record cannot be a share's root yet (shares reference it).
        IF TG_OP = 'UPDATE' THEN
            SELECT s.id INTO root_share FROM canopy.shares s WHERE s.root_record_id = NEW.id;
        END IF;
        IF root_share IS NOT NULL THEN
            IF parent_share IS NOT NULL AND parent_share <> root_share THEN
                RAISE EXCEPTION 'record % is the root of a share and cannot be moved into another share', NEW.record_name
                    USING ERRCODE = 'CN002';
            END IF;
            NEW.share_id := root_share;
        ELSE
            NEW.share_id := parent_share;
        END IF;
    END IF;

    IF TG_OP = 'UPDATE' AND OLD.share_id IS NOT NULL AND NEW.share_id IS DISTINCT FROM OLD.share_id THEN
        INSERT INTO canopy.tombstones (zone_id, record_name, record_type, share_id, change_seq, deleted_by, kind)
        VALUES (OLD.zone_id, OLD.record_name, OLD.record_type, OLD.share_id, NEW.change_seq, canopy.current_user_id(), 'left_share');
    END IF;
    RETURN NEW;
END
$$;

-- The type of the values most fields hold (strings, booleans, integers,
-- decimals, timestamps, lists of strings), without a function call: an
-- expression PostgreSQL inlines. NULL for anything else, which
-- canopy.field_value_type then types or refuses with its full checks.
CREATE FUNCTION canopy.plain_value_type(p_value jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE jsonb_typeof(p_value)
        WHEN 'string' THEN 'STRING'
        WHEN 'boolean' THEN 'BOOLEAN'
        WHEN 'number' THEN CASE WHEN p_value::text ~ '^-?[0-9]{1,18}$' THEN 'INT64'
                                WHEN p_value::text ~ '^-?[0-9]+\.[0-9]+$' THEN 'DOUBLE' END
        WHEN 'object' THEN CASE WHEN p_value->>'type' = 'TIMESTAMP' AND jsonb_typeof(p_value->'value') = 'number'
                                     AND (p_value - 'type' - 'value') = '{}'::jsonb THEN 'TIMESTAMP' END
        WHEN 'array' THEN CASE WHEN jsonb_array_length(p_value) > 0
                                     AND NOT jsonb_path_exists(p_value, 'strict $[*] ? (@.type() != "string")')
                                THEN 'LIST<STRING>' END
    END
$$;

-- Checks the fields of the rows a statement wrote against the record
-- types' field types, fixing the type of fields seen for the first time
-- (in the order the rows were written); CN004 names the field. Field
-- names follow API.md §4.
CREATE FUNCTION canopy.records_check_written_fields() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    seen record;
    declared text;
BEGIN
    FOR seen IN
        SELECT f.record_type, f.key, f.value_type
          FROM (SELECT w.record_type, e.key, coalesce(canopy.plain_value_type(e.value), canopy.field_value_type(e.key, e.value)) AS value_type, w.change_seq
                  FROM written w, jsonb_each(w.fields) e) f
         GROUP BY f.record_type, f.key, f.value_type
         ORDER BY min(f.change_seq)
    LOOP
        IF seen.key !~ '^[A-Za-z][A-Za-z0-9_]{0,254}$' THEN
            RAISE EXCEPTION 'field name "%" must be a letter followed by letters, digits or _ (at most 255)', left(seen.key, 300)
                USING ERRCODE = 'CN004';
        END IF;
        SELECT field_type INTO declared FROM canopy.field_types
         WHERE record_type = seen.record_type AND field_name = seen.key;
        IF declared IS NULL AND seen.value_type <> 'LIST' THEN
            INSERT INTO canopy.field_types (record_type, field_name, field_type)
            VALUES (seen.record_type, seen.key, seen.value_type)
            ON CONFLICT DO NOTHING;
            SELECT field_type INTO declared FROM canopy.field_types
             WHERE record_type = seen.record_type AND field_name = seen.key;
        END IF;
        IF declared IS NOT NULL AND NOT canopy.field_type_accepts(declared, seen.value_type) THEN
            RAISE EXCEPTION 'field % of record type % is %, not %', seen.key, seen.record_type, declared, seen.value_type
                USING ERRCODE = 'CN004';
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION canopy.records_check_written_fields() IS 'Checks the field types of the rows a statement wrote (once per distinct record type, field and value type).';

DROP TRIGGER records_check_fields ON canopy.records;
DROP FUNCTION canopy.records_check_fields();
CREATE TRIGGER records_check_inserted_fields AFTER INSERT ON canopy.records
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_check_written_fields();
CREATE TRIGGER records_check_updated_fields AFTER UPDATE ON canopy.records
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_check_written_fields();

DROP TRIGGER records_after_insert ON canopy.records;
CREATE TRIGGER records_after_insert AFTER INSERT ON canopy.records
    FOR EACH ROW WHEN (NEW.share_id IS NOT NULL)
    EXECUTE FUNCTION canopy.records_after_write();

DROP TRIGGER records_parent_exists ON canopy.records;
CREATE CONSTRAINT TRIGGER records_parent_exists AFTER INSERT OR UPDATE OF parent_name ON canopy.records
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.parent_name IS NOT NULL)
    EXECUTE FUNCTION canopy.records_check_parent();

-- modifyRecords (0006) with a fast path: a batch of new records without
-- parents or change tags is one INSERT … SELECT. If that statement fails
-- for any record, it is rolled back and the batch goes one record at a
-- time, as before, so each failure is named.
CREATE OR REPLACE FUNCTION canopy.modify_records(p_zone_id bigint, p_saves jsonb, p_deletes text[], p_policy text)
    RETURNS jsonb
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    save jsonb;
    name text;
    existing record;
    saved_id bigint;
    new_fields jsonb;
    saved bigint[] := '{}';
    deleted text[] := '{}';
    errors jsonb := '[]';
    failure jsonb;
    written_together boolean := false;
BEGIN
    IF jsonb_array_length(p_saves) > 1
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_saves) s
                        WHERE s.value->>'parent' IS NOT NULL OR s.value->>'recordChangeTag' IS NOT NULL)
       AND NOT EXISTS (SELECT 1 FROM canopy.records r
                        WHERE r.zone_id = p_zone_id
                          AND r.record_name = ANY (ARRAY(SELECT s.value->>'recordName' FROM jsonb_array_elements(p_saves) s))) THEN
        BEGIN
            WITH input AS (
                SELECT e.value AS save, e.position FROM jsonb_array_elements(p_saves) WITH ORDINALITY e(value, position)
            ), inserted AS (
                INSERT INTO canopy.records (zone_id, record_name, record_type, fields)
                SELECT p_zone_id, input.save->>'recordName', input.save->>'recordType', input.save->'fields'
                  FROM input ORDER BY input.position
                RETURNING id, record_name
            )
            SELECT array_agg(inserted.id ORDER BY input.position) INTO saved
              FROM inserted JOIN input ON input.save->>'recordName' = inserted.record_name;
            written_together := cardinality(saved) = jsonb_array_length(p_saves);
            IF NOT written_together THEN
                RAISE EXCEPTION 'not every record was written' USING ERRCODE = 'CN000';
            END IF;
        EXCEPTION WHEN OTHERS THEN
            saved := '{}';
            written_together := false;
        END;
    END IF;

    FOR save IN SELECT value FROM jsonb_array_elements(p_saves) WHERE NOT written_together LOOP
        name := save->>'recordName';
        failure := NULL;
        BEGIN
            SELECT id, record_type, change_tag, fields INTO existing
              FROM canopy.records WHERE zone_id = p_zone_id AND record_name = name FOR UPDATE;
            IF save->>'parent' IS NOT NULL AND save->>'parent' <> name AND NOT EXISTS (
                SELECT 1 FROM canopy.records WHERE zone_id = p_zone_id AND record_name = save->>'parent'
            ) THEN
                failure := jsonb_build_object('code', 'REFERENCE_VIOLATION',
                    'message', format('parent %s does not exist in the zone', save->>'parent'));
            ELSIF existing.id IS NULL THEN
                IF save->>'recordChangeTag' IS NOT NULL THEN
                    failure := jsonb_build_object('code', 'UNKNOWN_ITEM',
                        'message', format('record %s does not exist (it was saved with a change tag)', name));
                ELSE
                    INSERT INTO canopy.records (zone_id, record_name, record_type, fields, parent_name)
                    VALUES (p_zone_id, name, save->>'recordType', save->'fields', save->>'parent')
                    RETURNING id INTO saved_id;
                END IF;
            ELSIF existing.record_type <> save->>'recordType' THEN
                failure := jsonb_build_object('code', 'INVALID_ARGUMENTS',
                    'message', format('record %s is a %s, not a %s', name, existing.record_type, save->>'recordType'));
            ELSIF p_policy = 'IF_SERVER_RECORD_UNCHANGED' AND (save->>'recordChangeTag') IS DISTINCT FROM existing.change_tag THEN
                failure := jsonb_build_object('code', 'SERVER_RECORD_CHANGED', 'serverRecordId', existing.id,
                    'message', CASE WHEN save->>'recordChangeTag' IS NULL
                        THEN format('record %s exists: save it with its recordChangeTag', name)
                        ELSE format('record %s changed on the server since tag %s', name, save->>'recordChangeTag') END);
            ELSE
                new_fields := CASE WHEN p_policy = 'CHANGED_KEYS'
                    THEN jsonb_strip_nulls(existing.fields || (save->'fields'))
                    ELSE save->'fields' END;
                UPDATE canopy.records SET fields = new_fields, parent_name = save->>'parent'
                 WHERE id = existing.id
                RETURNING id INTO saved_id;
                IF saved_id IS NULL THEN
                    failure := jsonb_build_object('code', 'PERMISSION_FAILURE',
                        'message', format('you may not change record %s', name));
                END IF;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            failure := jsonb_build_object('sqlstate', SQLSTATE, 'message', SQLERRM);
        END;
        IF failure IS NULL THEN
            saved := saved || saved_id;
        ELSE
            errors := errors || (failure || jsonb_build_object('recordName', name));
        END IF;
        saved_id := NULL;
        existing := NULL;
    END LOOP;

    FOREACH name IN ARRAY coalesce(p_deletes, '{}') LOOP
        failure := NULL;
        BEGIN
            DELETE FROM canopy.records WHERE zone_id = p_zone_id AND record_name = name RETURNING id INTO saved_id;
            IF saved_id IS NULL AND EXISTS (
                SELECT 1 FROM canopy.records r WHERE r.zone_id = p_zone_id AND r.record_name = name
                   AND r.id = ANY (canopy.member_root_record_ids())
            ) THEN
                -- A participant deleting the root of a share they accepted
                -- leaves the share; the owner's records are untouched.
                PERFORM canopy.leave_shares(p_zone_id, name);
                saved_id := 0;
            END IF;
            IF saved_id IS NULL THEN
                IF EXISTS (SELECT 1 FROM canopy.records WHERE zone_id = p_zone_id AND record_name = name) THEN
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
        END IF;
        saved_id := NULL;
    END LOOP;
    RETURN jsonb_build_object('saved', to_jsonb(saved), 'deleted', to_jsonb(deleted), 'errors', errors);
END
$$;

REVOKE ALL ON FUNCTION canopy.records_check_written_fields(), canopy.plain_value_type(jsonb) FROM PUBLIC;
