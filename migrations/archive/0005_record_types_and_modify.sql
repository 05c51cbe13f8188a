-- Field types fixed at first save (API.md §4), and modifyRecords as one
-- server-side call that runs as the caller, under row-level security.
-- unaccent: `self CONTAINS` matches words whatever their accents.
CREATE EXTENSION IF NOT EXISTS unaccent WITH SCHEMA public;

SET LOCAL ROLE canopy_owner;

-- Who saved: userRecordNames kept on the record, so a record can be shown
-- with its stamps to anyone who may read it, without reading users.
ALTER TABLE canopy.records ADD COLUMN created_by_name text, ADD COLUMN modified_by_name text;
COMMENT ON COLUMN canopy.records.created_by_name IS 'created.userRecordName; set by trigger.';
COMMENT ON COLUMN canopy.records.modified_by_name IS 'modified.userRecordName; set by trigger.';

CREATE TABLE canopy.field_types (
    record_type  text NOT NULL CHECK (record_type ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$'),
    field_name   text NOT NULL CHECK (field_name ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$'),
    field_type   text NOT NULL CHECK (field_type ~ '^(LIST<)?(STRING|INT64|DOUBLE|BOOLEAN|TIMESTAMP|REFERENCE|LOCATION|BYTES)>?$'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (record_type, field_name)
);
COMMENT ON TABLE canopy.field_types IS 'The schema: each record type''s field types, fixed by the first save of a field (CloudKit''s just-in-time schema). Readable by every user, like a CloudKit container''s schema.';
COMMENT ON COLUMN canopy.field_types.record_type IS 'recordType.';
COMMENT ON COLUMN canopy.field_types.field_name IS 'Field name.';
COMMENT ON COLUMN canopy.field_types.field_type IS 'STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP, REFERENCE, LOCATION, BYTES, or LIST<one of those>.';
COMMENT ON COLUMN canopy.field_types.created_at IS 'When the first save fixed it.';
ALTER TABLE canopy.field_types ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.field_types FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.field_types TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY field_types_select ON canopy.field_types FOR SELECT TO canopy_gateway USING (true);
GRANT SELECT ON canopy.field_types TO canopy_gateway;

-- The type of one field value, or CN004 naming the field. Lists of one
-- type; an empty list is 'LIST' (its element type unknown).
CREATE FUNCTION canopy.field_value_type(p_field text, p_value jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    element jsonb;
    element_type text;
    this_type text;
    number numeric;
BEGIN
    CASE jsonb_typeof(p_value)
    WHEN 'string' THEN
        RETURN 'STRING';
    WHEN 'number' THEN
        number := p_value::text::numeric;
        IF number = trunc(number) AND p_value::text !~ '[.eE]' THEN
            IF abs(number) > 9223372036854775807 THEN
                RAISE EXCEPTION 'field %: % does not fit in INT64', p_field, p_value USING ERRCODE = 'CN004';
            END IF;
            RETURN 'INT64';
        END IF;
        RETURN 'DOUBLE';
    WHEN 'boolean' THEN
        RETURN 'BOOLEAN';
    WHEN 'array' THEN
        FOR element IN SELECT value FROM jsonb_array_elements(p_value) LOOP
            IF jsonb_typeof(element) = 'array' THEN
                RAISE EXCEPTION 'field %: a list cannot hold lists', p_field USING ERRCODE = 'CN004';
            END IF;
            this_type := canopy.field_value_type(p_field, element);
            IF element_type IS NULL OR element_type = this_type THEN
                element_type := this_type;
            ELSIF (element_type, this_type) IN (('INT64', 'DOUBLE'), ('DOUBLE', 'INT64')) THEN
                element_type := 'DOUBLE';
            ELSE
                RAISE EXCEPTION 'field %: a list holds values of one type, not % and %', p_field, element_type, this_type
                    USING ERRCODE = 'CN004';
            END IF;
        END LOOP;
        RETURN 'LIST' || coalesce('<' || element_type || '>', '');
    WHEN 'object' THEN
        CASE p_value->>'type'
        WHEN 'TIMESTAMP' THEN
            IF jsonb_typeof(p_value->'value') <> 'number' OR (p_value - 'type' - 'value') <> '{}' THEN
                RAISE EXCEPTION 'field %: a TIMESTAMP is {"type":"TIMESTAMP","value":<ms since epoch>}', p_field USING ERRCODE = 'CN004';
            END IF;
        WHEN 'REFERENCE' THEN
            IF jsonb_typeof(p_value->'recordName') IS DISTINCT FROM 'string'
               OR coalesce(p_value->>'action', 'NONE') NOT IN ('NONE', 'DELETE_SELF')
               OR (p_value - 'type' - 'recordName' - 'action') <> '{}' THEN
                RAISE EXCEPTION 'field %: a REFERENCE is {"type":"REFERENCE","recordName":"...","action":"NONE"|"DELETE_SELF"}', p_field USING ERRCODE = 'CN004';
            END IF;
        WHEN 'LOCATION' THEN
            IF jsonb_typeof(p_value->'latitude') IS DISTINCT FROM 'number' OR jsonb_typeof(p_value->'longitude') IS DISTINCT FROM 'number'
               OR abs((p_value->>'latitude')::float8) > 90 OR abs((p_value->>'longitude')::float8) > 180
               OR (p_value - 'type' - 'latitude' - 'longitude') <> '{}' THEN
                RAISE EXCEPTION 'field %: a LOCATION is {"type":"LOCATION","latitude":-90..90,"longitude":-180..180}', p_field USING ERRCODE = 'CN004';
            END IF;
        WHEN 'BYTES' THEN
            IF jsonb_typeof(p_value->'base64') IS DISTINCT FROM 'string'
               OR p_value->>'base64' !~ '^[A-Za-z0-9+/]*={0,2}$' OR length(p_value->>'base64') % 4 <> 0
               OR (p_value - 'type' - 'base64') <> '{}' THEN
                RAISE EXCEPTION 'field %: BYTES are {"type":"BYTES","base64":"..."} with valid base64', p_field USING ERRCODE = 'CN004';
            END IF;
        ELSE
            RAISE EXCEPTION 'field %: an object value must have "type" TIMESTAMP, REFERENCE, LOCATION or BYTES', p_field USING ERRCODE = 'CN004';
        END CASE;
        RETURN p_value->>'type';
    ELSE
        RAISE EXCEPTION 'field %: null is not a value (leave the field out)', p_field USING ERRCODE = 'CN004';
    END CASE;
END
$$;

-- Whether a field of type p_declared accepts a value of type p_value.
CREATE FUNCTION canopy.field_type_accepts(p_declared text, p_value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p_declared = p_value
        OR (p_declared = 'DOUBLE' AND p_value = 'INT64')
        OR (p_declared = 'LIST<DOUBLE>' AND p_value = 'LIST<INT64>')
        OR (p_declared LIKE 'LIST<%' AND p_value = 'LIST')
$$;

-- Checks every field of a written record against the record type's field
-- types, fixing the type of fields seen for the first time; records who
-- saved. Field names follow API.md §4.
CREATE FUNCTION canopy.records_check_fields() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key text;
    value jsonb;
    value_type text;
    declared text;
BEGIN
    IF TG_OP = 'INSERT' OR NEW.modified_by IS DISTINCT FROM OLD.modified_by OR NEW.modified_at <> OLD.modified_at THEN
        NEW.modified_by_name := (SELECT record_name FROM canopy.users WHERE id = NEW.modified_by);
        IF TG_OP = 'INSERT' THEN
            NEW.created_by_name := NEW.modified_by_name;
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.fields = OLD.fields AND NEW.record_type = OLD.record_type THEN
        RETURN NEW;
    END IF;
    FOR key, value IN SELECT * FROM jsonb_each(NEW.fields) LOOP
        IF key !~ '^[A-Za-z][A-Za-z0-9_]{0,254}$' THEN
            RAISE EXCEPTION 'field name "%" must be a letter followed by letters, digits or _ (at most 255)', left(key, 300)
                USING ERRCODE = 'CN004';
        END IF;
        value_type := canopy.field_value_type(key, value);
        SELECT field_type INTO declared FROM canopy.field_types WHERE record_type = NEW.record_type AND field_name = key;
        IF declared IS NULL AND value_type <> 'LIST' THEN
            INSERT INTO canopy.field_types (record_type, field_name, field_type)
            VALUES (NEW.record_type, key, value_type)
            ON CONFLICT DO NOTHING;
            SELECT field_type INTO declared FROM canopy.field_types WHERE record_type = NEW.record_type AND field_name = key;
        END IF;
        IF declared IS NOT NULL AND NOT canopy.field_type_accepts(declared, value_type) THEN
            RAISE EXCEPTION 'field % of record type % is %, not %', key, NEW.record_type, declared, value_type
                USING ERRCODE = 'CN004';
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;
-- Runs after records_before_write (trigger names fire in alphabetical order).
CREATE TRIGGER records_check_fields BEFORE INSERT OR UPDATE ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_check_fields();

-- modifyRecords: saves and deletes in one zone, each record on its own
-- (a subtransaction), as the caller: row-level security decides what may be
-- written. Returns {"saved": [ids in order], "deleted": [names],
-- "errors": [{"recordName", "sqlstate" or "code", "message", "serverRecordId"}]}.
-- The gateway maps SQLSTATEs to API codes, and rolls the whole transaction
-- back when an atomic batch has errors. Saves arrive parents first.
CREATE FUNCTION canopy.modify_records(p_zone_id bigint, p_saves jsonb, p_deletes text[], p_policy text)
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
BEGIN
    FOR save IN SELECT value FROM jsonb_array_elements(p_saves) LOOP
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

-- Deleting a record deletes, in the same transaction, every record of its
-- zone whose REFERENCE field points at it with "action":"DELETE_SELF"
-- (recursively, since those deletions fire this trigger too).
CREATE FUNCTION canopy.records_delete_self_references() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM canopy.records r
     WHERE r.zone_id = OLD.zone_id AND r.id <> OLD.id
       AND EXISTS (
           SELECT 1 FROM jsonb_each(r.fields) f
            WHERE (f.value->>'type' = 'REFERENCE' AND f.value->>'recordName' = OLD.record_name AND f.value->>'action' = 'DELETE_SELF')
               OR (jsonb_typeof(f.value) = 'array' AND f.value @> jsonb_build_array(jsonb_build_object(
                       'type', 'REFERENCE', 'recordName', OLD.record_name, 'action', 'DELETE_SELF')))
       );
    RETURN NULL;
END
$$;
CREATE TRIGGER records_delete_self_references AFTER DELETE ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_delete_self_references();

-- `self CONTAINS 'text'`: the words of a record's string fields (and lists
-- of strings), lower-cased and without accents, against all the words of
-- the text.
CREATE FUNCTION canopy.search_document(p_fields jsonb) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT to_tsvector('simple'::regconfig, public.unaccent('public.unaccent'::regdictionary, coalesce(string_agg(v, ' '), '')))
      FROM (SELECT f.value #>> '{}' AS v FROM jsonb_each(p_fields) f WHERE jsonb_typeof(f.value) = 'string'
            UNION ALL
            SELECT e #>> '{}' FROM jsonb_each(p_fields) f,
                   jsonb_array_elements(CASE WHEN jsonb_typeof(f.value) = 'array' THEN f.value ELSE '[]' END) e
             WHERE jsonb_typeof(e) = 'string') strings
$$;
CREATE FUNCTION canopy.search_query(p_text text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT plainto_tsquery('simple'::regconfig, public.unaccent('public.unaccent'::regdictionary, p_text)) $$;

-- Secrets the gateway signs cursors (and later change tokens) with, kept in
-- the database so every gateway process agrees. Created on first use from a
-- candidate the caller generated; nobody reads the table directly.
CREATE TABLE canopy.server_secrets (
    name        text PRIMARY KEY,
    secret      bytea NOT NULL CHECK (octet_length(secret) >= 32),
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE canopy.server_secrets IS 'Keys for signing cursors and change tokens; read only through canopy.server_secret().';
COMMENT ON COLUMN canopy.server_secrets.name IS 'What the key signs, e.g. cursor.';
COMMENT ON COLUMN canopy.server_secrets.secret IS 'At least 256 random bits.';
COMMENT ON COLUMN canopy.server_secrets.created_at IS 'When it was made.';
ALTER TABLE canopy.server_secrets ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.server_secrets FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.server_secrets TO canopy_owner USING (true) WITH CHECK (true);

CREATE FUNCTION canopy.server_secret(p_name text, p_candidate bytea) RETURNS bytea
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO canopy.server_secrets (name, secret) VALUES (p_name, p_candidate) ON CONFLICT DO NOTHING;
    RETURN (SELECT secret FROM canopy.server_secrets WHERE name = p_name);
END
$$;

-- Equality and containment on fields (fields @> '{"k": v}').
CREATE INDEX records_fields_idx ON canopy.records USING gin (fields jsonb_path_ops);

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA canopy FROM PUBLIC;
GRANT EXECUTE ON FUNCTION canopy.modify_records(bigint, jsonb, text[], text),
    canopy.field_value_type(text, jsonb), canopy.field_type_accepts(text, text),
    canopy.search_document(jsonb), canopy.search_query(text), canopy.server_secret(text, bytea)
    TO canopy_gateway;
