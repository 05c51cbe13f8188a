-- Triggers on canopy.records and their functions: records_before_validate_references
-- (records_validate_references, issue 66), records_before_write,
-- records_after_insert / records_after_move / records_after_delete
-- (records_after_write), records_after_zone_move, records_parent_exists (records_check_parent),
-- records_delete_self_references, records_check_declared (updates),
-- records_check_declared_inserted (records_check_declared_written),
-- records_check_inserted_fields / records_check_updated_fields
-- (records_check_written_fields), records_check_writers_inserted /
-- records_check_writers_updated (records_check_writers). Before-row triggers fire in name order.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0003, 0005, 0007, 0008 and 0010.
--
-- Triggers that keep the invariants of docs/API.md §1 that a plain constraint
-- cannot hold. Errors raised here use SQLSTATEs of class CN, which the
-- gateway maps to API codes in one place:
--   CN001 REFERENCE_VIOLATION   CN002 ALREADY_SHARED
--   CN003 LIMIT_EXCEEDED        CN004 INVALID_ARGUMENTS
--   CN005 PERMISSION_FAILURE
--
-- Functions that must see past row-level security are SECURITY DEFINER (they
-- run as canopy_owner, whose only policies are the canopy_owner_all ones in
-- 0004), pin search_path, and are not executable by PUBLIC.

SET LOCAL ROLE canopy_owner;

-- records_before_write (0003) with the zone touched rather than only
-- locked, and a left_share tombstone when a record leaves a record-rooted
-- share, so that share's participants see it go.
--
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
    moved boolean;
    position bigint;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.record_name <> OLD.record_name THEN
        RAISE EXCEPTION 'a record''s recordName never changes' USING ERRCODE = 'CN004';
    END IF;
    -- A move (canopy.move_records, issue 38): only inside that function;
    -- both zones locked in id order, the order every move takes.
    moved := TG_OP = 'UPDATE' AND NEW.zone_id <> OLD.zone_id;
    IF moved THEN
        IF current_setting('canopy.moving_records', true) IS DISTINCT FROM 'y' THEN
            RAISE EXCEPTION 'a record changes zone only through moveRecords' USING ERRCODE = 'CN004';
        END IF;
        IF OLD.zone_id < NEW.zone_id THEN
            PERFORM canopy.touch_zone(OLD.zone_id, OLD.owner_id);
            PERFORM canopy.touch_zone(NEW.zone_id, NEW.owner_id);
        ELSE
            PERFORM canopy.touch_zone(NEW.zone_id, NEW.owner_id);
            PERFORM canopy.touch_zone(OLD.zone_id, OLD.owner_id);
        END IF;
    END IF;

    -- Change positions within a zone follow commit order: take them under the
    -- zone's row lock, which a concurrent writer to the same zone waits for
    -- (canopy.draw_position, counted inline here as every record written
    -- takes one). A moved record's position is above its last, so its
    -- change tags only grow (DECISIONS 165).
    position := nullif(current_setting('canopy.zone_position_' || NEW.zone_id, true), '')::bigint + 1;
    IF position IS NULL OR position & 1048575 = 0 OR (moved AND position <= OLD.change_seq) THEN
        -- 0 for a zone that does not exist: the foreign key refuses the row.
        position := coalesce(canopy.draw_position(NEW.zone_id, NEW.owner_id, CASE WHEN moved THEN OLD.change_seq ELSE 0 END), 0);
    ELSE
        PERFORM set_config('canopy.zone_position_' || NEW.zone_id, position::text, true);
    END IF;
    NEW.change_seq := position;

    content_changed := TG_OP = 'INSERT' OR moved
        OR NEW.fields IS DISTINCT FROM OLD.fields
        OR NEW.record_type IS DISTINCT FROM OLD.record_type
        OR NEW.parent_name IS DISTINCT FROM OLD.parent_name
        OR NEW.share_id IS NOT DISTINCT FROM OLD.share_id;   -- a save of identical content is still a save
    IF content_changed THEN
        NEW.change_tag := to_hex(NEW.change_seq);
        -- Whole milliseconds, as CloudKit's stamps are (issue 49): the
        -- stored stamp is the one every answer and every filter sees.
        NEW.modified_at := date_trunc('milliseconds', now());
        NEW.modified_by := canopy.current_user_id();
        IF TG_OP = 'INSERT' THEN
            NEW.created_at := NEW.modified_at;
            NEW.created_by := NEW.modified_by;
        ELSE
            NEW.created_at := OLD.created_at;
            -- The creator stays, unless they are no longer a user
            -- (users_forget_writer, issue 51): a record's creator was put
            -- back here even under the foreign key's ON DELETE SET NULL,
            -- which left it naming a deleted user.
            IF NEW.created_by IS NOT NULL OR OLD.created_by IS NULL
               OR EXISTS (SELECT 1 FROM canopy.users WHERE id = OLD.created_by) THEN
                NEW.created_by := OLD.created_by;
            END IF;
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

    IF TG_OP = 'INSERT' OR moved OR NEW.parent_name IS DISTINCT FROM OLD.parent_name THEN
        IF NEW.parent_name IS NOT NULL THEN
            -- No cycles: walk up from the new parent (writes only, never reads).
            -- By EXECUTE … USING, the row's values bound: on Citus this runs
            -- in the record's shard's task, where a recursive query over the
            -- trigger's variables cannot be planned.
            EXECUTE 'WITH RECURSIVE up (name, depth) AS (
                         SELECT $1::text, 1
                         UNION
                         SELECT r.parent_name, up.depth + 1
                           FROM canopy.records r JOIN up ON r.owner_id = $2 AND r.zone_id = $3 AND r.record_name = up.name
                          WHERE r.parent_name IS NOT NULL AND up.depth < 10000
                     )
                     SELECT name FROM up WHERE name = $4 LIMIT 1'
                INTO ancestor
                USING NEW.parent_name, NEW.owner_id, NEW.zone_id, NEW.record_name;
            IF ancestor IS NOT NULL THEN
                RAISE EXCEPTION 'parent % of record % makes a cycle', NEW.parent_name, NEW.record_name
                    USING ERRCODE = 'CN001';
            END IF;
            SELECT r.share_id INTO parent_share FROM canopy.records r
             WHERE r.owner_id = NEW.owner_id AND r.zone_id = NEW.zone_id AND r.record_name = NEW.parent_name;
        END IF;

        -- A new record cannot be a share's root yet (shares reference it).
        IF TG_OP = 'UPDATE' THEN
            SELECT s.id INTO root_share FROM canopy.shares s WHERE s.owner_id = OLD.owner_id AND s.root_record_id = NEW.id;
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

    IF moved THEN
        -- The source zone's feed shows a deletion; the target's, a new record.
        INSERT INTO canopy.tombstones (zone_id, owner_id, record_name, record_type, share_id, change_seq, deleted_by, created_by)
        VALUES (OLD.zone_id, OLD.owner_id, OLD.record_name, OLD.record_type, OLD.share_id, NEW.change_seq, canopy.current_user_id(), OLD.created_by);
    ELSIF TG_OP = 'UPDATE' AND OLD.share_id IS NOT NULL AND NEW.share_id IS DISTINCT FROM OLD.share_id THEN
        INSERT INTO canopy.tombstones (zone_id, owner_id, record_name, record_type, share_id, change_seq, deleted_by, kind)
        VALUES (OLD.zone_id, OLD.owner_id, OLD.record_name, OLD.record_type, OLD.share_id, NEW.change_seq, canopy.current_user_id(), 'left_share');
    END IF;
    RETURN NEW;
END
$$;

-- A reference saved with "action":"VALIDATE" (issue 66; Web Services and
-- GraphQL alike): its target must be a record of the record's zone *that
-- the writer can see* when the record is saved (already, or saved before it
-- in the same batch), else CN001 (VALIDATING_REFERENCE_ERROR over Web
-- Services). Not a definer, unlike records_before_write: checked past
-- row-level security, a VALIDATE reference would tell whether a record the
-- writer may not read exists. It is kept as NONE: CloudKit stores NONE and
-- DELETE_SELF, and clients read no other. Named to fire before
-- records_before_write (before-row triggers fire in name order).
CREATE OR REPLACE FUNCTION canopy.records_validate_references() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    unvalidated_field text;
    unvalidated_target text;
BEGIN
    IF NEW.fields @? '$.* ? (@.type == "REFERENCE" && @.action == "VALIDATE")' THEN
        SELECT f.key, v.value->>'recordName' INTO unvalidated_field, unvalidated_target
          FROM jsonb_each(NEW.fields) f
         CROSS JOIN LATERAL jsonb_array_elements(
               CASE jsonb_typeof(f.value) WHEN 'array' THEN f.value ELSE jsonb_build_array(f.value) END) v
         WHERE v.value->>'type' = 'REFERENCE' AND v.value->>'action' = 'VALIDATE'
           AND v.value->>'recordName' IS DISTINCT FROM NEW.record_name
           AND NOT EXISTS (SELECT 1 FROM canopy.records r
                            WHERE r.owner_id = NEW.owner_id AND r.zone_id = NEW.zone_id AND r.record_name = v.value->>'recordName')
         ORDER BY f.key
         LIMIT 1;
        IF unvalidated_field IS NOT NULL THEN
            RAISE EXCEPTION 'field % of record %: the referenced record % does not exist in the zone (the reference''s action is VALIDATE)',
                unvalidated_field, NEW.record_name, coalesce(unvalidated_target, 'null') USING ERRCODE = 'CN001';
        END IF;
        NEW.fields := (
            SELECT jsonb_object_agg(f.key, CASE
                WHEN jsonb_typeof(f.value) = 'array' THEN coalesce((
                    SELECT jsonb_agg(CASE WHEN e.value->>'type' = 'REFERENCE' AND e.value->>'action' = 'VALIDATE'
                                          THEN jsonb_set(e.value, '{action}', '"NONE"') ELSE e.value END ORDER BY e.ordinality)
                      FROM jsonb_array_elements(f.value) WITH ORDINALITY e), '[]'::jsonb)
                WHEN f.value->>'type' = 'REFERENCE' AND f.value->>'action' = 'VALIDATE'
                    THEN jsonb_set(f.value, '{action}', '"NONE"')
                ELSE f.value END)
              FROM jsonb_each(NEW.fields) f);
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS records_before_validate_references ON canopy.records;
CREATE TRIGGER records_before_validate_references BEFORE INSERT OR UPDATE OF fields ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_validate_references();

DROP TRIGGER IF EXISTS records_before_write ON canopy.records;
CREATE TRIGGER records_before_write BEFORE INSERT OR UPDATE ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_before_write();

-- records_after_write (0003) with the zone touched on delete.
CREATE OR REPLACE FUNCTION canopy.records_after_write() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    seq bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Nothing to record when the whole zone goes (ON DELETE CASCADE).
        IF canopy.touch_zone(OLD.zone_id, OLD.owner_id) THEN
            seq := canopy.draw_position(OLD.zone_id, OLD.owner_id);
            INSERT INTO canopy.tombstones (zone_id, owner_id, record_name, record_type, share_id, change_seq, deleted_by, created_by)
            VALUES (OLD.zone_id, OLD.owner_id, OLD.record_name, OLD.record_type, OLD.share_id, seq, canopy.current_user_id(), OLD.created_by);
            -- Children keep their dangling parent_name but leave the share.
            PERFORM canopy.propagate_share(OLD.zone_id, OLD.owner_id, OLD.record_name, NULL);
        END IF;
        RETURN NULL;
    END IF;
    PERFORM canopy.propagate_share(NEW.zone_id, NEW.owner_id, NEW.record_name, NEW.share_id);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS records_after_insert ON canopy.records;
CREATE TRIGGER records_after_insert AFTER INSERT ON canopy.records
    FOR EACH ROW WHEN (NEW.share_id IS NOT NULL)
    EXECUTE FUNCTION canopy.records_after_write();

DROP TRIGGER IF EXISTS records_after_move ON canopy.records;
CREATE TRIGGER records_after_move AFTER UPDATE OF parent_name ON canopy.records
    FOR EACH ROW WHEN (OLD.parent_name IS DISTINCT FROM NEW.parent_name)
    EXECUTE FUNCTION canopy.records_after_write();

-- A record moved to another zone (canopy.move_records): records dangling
-- under its name in the target join its share; when its children stay
-- behind (withDescendants false) they leave it, as when a parent is deleted.
CREATE OR REPLACE FUNCTION canopy.records_after_zone_move() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('canopy.moving_subtrees', true) IS DISTINCT FROM 'y' THEN
        PERFORM canopy.propagate_share(OLD.zone_id, OLD.owner_id, OLD.record_name, NULL);
    END IF;
    PERFORM canopy.propagate_share(NEW.zone_id, NEW.owner_id, NEW.record_name, NEW.share_id);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS records_after_zone_move ON canopy.records;
CREATE TRIGGER records_after_zone_move AFTER UPDATE OF zone_id ON canopy.records
    FOR EACH ROW WHEN (OLD.zone_id <> NEW.zone_id)
    EXECUTE FUNCTION canopy.records_after_zone_move();

DROP TRIGGER IF EXISTS records_after_delete ON canopy.records;
CREATE TRIGGER records_after_delete AFTER DELETE ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_after_write();

-- Parents must exist in the same zone when a record is written; checked at
-- commit so a batch may save a child before its parent.
CREATE OR REPLACE FUNCTION canopy.records_check_parent() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.parent_name IS NOT NULL
       AND EXISTS (SELECT 1 FROM canopy.records WHERE owner_id = NEW.owner_id AND id = NEW.id AND parent_name = NEW.parent_name)
       AND NOT EXISTS (SELECT 1 FROM canopy.records WHERE owner_id = NEW.owner_id AND zone_id = NEW.zone_id AND record_name = NEW.parent_name) THEN
        RAISE EXCEPTION 'parent % of record % does not exist in its zone', NEW.parent_name, NEW.record_name
            USING ERRCODE = 'CN001';
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS records_parent_exists ON canopy.records;
CREATE CONSTRAINT TRIGGER records_parent_exists AFTER INSERT OR UPDATE OF parent_name ON canopy.records
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.parent_name IS NOT NULL)
    EXECUTE FUNCTION canopy.records_check_parent();

-- Deleting a record deletes, in the same transaction, every record of its
-- zone whose REFERENCE field points at it with "action":"DELETE_SELF"
-- (recursively, since those deletions fire this trigger too).
CREATE OR REPLACE FUNCTION canopy.records_delete_self_references() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM canopy.records r
     WHERE r.owner_id = OLD.owner_id AND r.zone_id = OLD.zone_id AND r.id <> OLD.id
       AND EXISTS (
           SELECT 1 FROM jsonb_each(r.fields) f
            WHERE (f.value->>'type' = 'REFERENCE' AND f.value->>'recordName' = OLD.record_name AND f.value->>'action' = 'DELETE_SELF')
               OR (jsonb_typeof(f.value) = 'array' AND f.value @> jsonb_build_array(jsonb_build_object(
                       'type', 'REFERENCE', 'recordName', OLD.record_name, 'action', 'DELETE_SELF')))
       );
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS records_delete_self_references ON canopy.records;
CREATE TRIGGER records_delete_self_references AFTER DELETE ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_delete_self_references();

-- Production mode (canopy serve --mode production sets canopy.schema_mode
-- for its write transactions): a saved record's type and every field must
-- be declared. Named to fire before records_check_fields, which would
-- otherwise fix the type of a new field. (Since archive/0010 that is the
-- statement trigger records_check_inserted_fields / _updated_fields.)
CREATE OR REPLACE FUNCTION canopy.records_check_declared() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.fields = OLD.fields AND NEW.record_type = OLD.record_type THEN
        RETURN NEW;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM canopy.field_types WHERE record_type = NEW.record_type) THEN
        RAISE EXCEPTION 'record type % is not in the schema (production mode: declare it and run canopy schema apply)', NEW.record_type
            USING ERRCODE = 'CN004';
    END IF;
    FOR key IN SELECT jsonb_object_keys(NEW.fields) LOOP
        IF NOT EXISTS (SELECT 1 FROM canopy.field_types WHERE record_type = NEW.record_type AND field_name = key) THEN
            RAISE EXCEPTION 'field % is not in record type %''s schema (production mode: declare it and run canopy schema apply)', left(key, 300), NEW.record_type
                USING ERRCODE = 'CN004';
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION canopy.records_check_declared() IS 'Production mode: refuses saves of undeclared record types and fields.';

DROP TRIGGER IF EXISTS records_check_declared ON canopy.records;
CREATE TRIGGER records_check_declared BEFORE UPDATE ON canopy.records
    FOR EACH ROW WHEN (current_setting('canopy.schema_mode', true) = 'production')
    EXECUTE FUNCTION canopy.records_check_declared();

-- The same check for inserted rows, once per statement over its transition
-- table (issue 51, item 2): a batch of 400 new records probed
-- canopy.field_types once a row and once a field of each row; it now
-- probes once per distinct record type and per distinct (type, field).
-- An AFTER STATEMENT trigger, named to fire before
-- records_check_inserted_fields (AFTER triggers fire in name order), which
-- would fix the type of a field seen for the first time. The messages are
-- the row trigger's; a batch written as one INSERT that fails is written
-- again one record at a time (modify_records), so each refusal still
-- names its record.
CREATE OR REPLACE FUNCTION canopy.records_check_declared_written() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    missing record;
BEGIN
    SELECT w.record_type INTO missing
      FROM (SELECT DISTINCT record_type FROM written) w
     WHERE NOT EXISTS (SELECT 1 FROM canopy.field_types t WHERE t.record_type = w.record_type)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'record type % is not in the schema (production mode: declare it and run canopy schema apply)', missing.record_type
            USING ERRCODE = 'CN004';
    END IF;
    SELECT k.record_type, k.key INTO missing
      FROM (SELECT DISTINCT w.record_type, e.key FROM written w, jsonb_object_keys(w.fields) e(key)) k
     WHERE NOT EXISTS (SELECT 1 FROM canopy.field_types t WHERE t.record_type = k.record_type AND t.field_name = k.key)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'field % is not in record type %''s schema (production mode: declare it and run canopy schema apply)', left(missing.key, 300), missing.record_type
            USING ERRCODE = 'CN004';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION canopy.records_check_declared_written() IS 'Production mode: refuses inserted rows of undeclared record types and fields, once per statement.';

DROP TRIGGER IF EXISTS records_check_declared_inserted ON canopy.records;
CREATE TRIGGER records_check_declared_inserted AFTER INSERT ON canopy.records
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT WHEN (current_setting('canopy.schema_mode', true) = 'production')
    EXECUTE FUNCTION canopy.records_check_declared_written();

-- Checks the fields of the rows a statement wrote against the record
-- types' field types, fixing the type of fields seen for the first time
-- (in the order the rows were written); CN004 names the field. Field
-- names follow docs/API.md §4.
CREATE OR REPLACE FUNCTION canopy.records_check_written_fields() RETURNS trigger
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

DROP TRIGGER IF EXISTS records_check_inserted_fields ON canopy.records;
CREATE TRIGGER records_check_inserted_fields AFTER INSERT ON canopy.records
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_check_written_fields();

DROP TRIGGER IF EXISTS records_check_updated_fields ON canopy.records;
CREATE TRIGGER records_check_updated_fields AFTER UPDATE ON canopy.records
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_check_written_fields();

-- A written row's writers are users (issue 51, migrations/0031): what the
-- foreign keys on created_by and modified_by checked once a row, once per
-- statement and per distinct user. The users' rows are locked FOR KEY
-- SHARE, as the foreign key's check locked them, so a user cannot be
-- deleted while a write naming them is under way; a user deleted before
-- the lock is granted is not found, and the write fails with the foreign
-- key's SQLSTATE. Deleting a user is users_forget_writer's
-- (sql/triggers/users.sql). A definer: the check must see every user.
CREATE OR REPLACE FUNCTION canopy.records_check_writers() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    writers bigint[];
    found integer;
BEGIN
    SELECT array_agg(DISTINCT w.id) INTO writers
      FROM (SELECT created_by AS id FROM written UNION SELECT modified_by FROM written) w
     WHERE w.id IS NOT NULL;
    IF writers IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO found
      FROM (SELECT 1 FROM canopy.users u WHERE u.id = ANY (writers) FOR KEY SHARE) locked;
    IF found < cardinality(writers) THEN
        RAISE EXCEPTION 'a record''s writer is not a user' USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION canopy.records_check_writers() IS 'A written record''s created_by and modified_by name users (the foreign keys before 0031), once per statement.';

DROP TRIGGER IF EXISTS records_check_writers_inserted ON canopy.records;
CREATE TRIGGER records_check_writers_inserted AFTER INSERT ON canopy.records
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_check_writers();

DROP TRIGGER IF EXISTS records_check_writers_updated ON canopy.records;
CREATE TRIGGER records_check_writers_updated AFTER UPDATE ON canopy.records
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_check_writers();

REVOKE ALL ON FUNCTION canopy.records_before_write() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_validate_references() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_after_write() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_after_zone_move() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_check_parent() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_delete_self_references() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_check_declared() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_check_declared_written() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_check_writers() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_check_written_fields() FROM PUBLIC, canopy_gateway;
