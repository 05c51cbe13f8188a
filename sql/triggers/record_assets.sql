-- Assets in saved records (docs/API.md §11): canopy.attach_asset and the
-- records_attach_assets trigger on canopy.records.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- A save names an upload by its token, {"type":"ASSET","uploadToken":"upl_…"};
-- before the row is written, each becomes the upload's stored form
-- {"type":"ASSET","sha256","size","contentType"} and the upload is marked
-- used, inside the record's own (sub)transaction: a record or an atomic batch
-- that fails leaves its uploads unused. An asset already in the stored form
-- must be one the record held (a client saving back what it read; a
-- downloadURL it carries is dropped): nobody attaches bytes by naming a
-- digest. Who may write the record is row-level security's decision, as for
-- every field.

SET LOCAL ROLE canopy_owner;

-- One asset value of field p_field: the stored form it saves as, or CN004
-- saying what is wrong. p_held: the stored asset values the record held.
CREATE OR REPLACE FUNCTION canopy.attach_asset(p_field text, p_value jsonb, p_held jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    upload canopy.uploads;
    stored jsonb;
BEGIN
    IF p_value ? 'uploadToken' THEN
        IF jsonb_typeof(p_value->'uploadToken') IS DISTINCT FROM 'string' OR (p_value - 'type' - 'uploadToken') <> '{}' THEN
            RAISE EXCEPTION 'field %: an ASSET is saved as {"type":"ASSET","uploadToken":"upl_…"}', p_field USING ERRCODE = 'CN004';
        END IF;
        SELECT * INTO upload FROM canopy.uploads
         WHERE token_hash = sha256(convert_to(p_value->>'uploadToken', 'UTF8'))
         FOR UPDATE;
        IF upload.id IS NULL OR upload.user_id IS DISTINCT FROM canopy.current_user_id() THEN
            RAISE EXCEPTION 'field %: the uploadToken is not one of your uploads', p_field USING ERRCODE = 'CN004';
        ELSIF upload.used_at IS NOT NULL THEN
            RAISE EXCEPTION 'field %: the uploadToken was used already; upload the file again', p_field USING ERRCODE = 'CN004';
        ELSIF upload.expires_at <= now() THEN
            RAISE EXCEPTION 'field %: the uploadToken expired at %; upload the file again', p_field, upload.expires_at
                USING ERRCODE = 'CN004';
        END IF;
        UPDATE canopy.uploads SET used_at = now() WHERE id = upload.id;
        RETURN jsonb_build_object('type', 'ASSET', 'sha256', upload.sha256, 'size', upload.size, 'contentType', upload.content_type);
    END IF;
    stored := jsonb_build_object('type', 'ASSET', 'sha256', p_value->'sha256', 'size', p_value->'size',
                                 'contentType', p_value->'contentType');
    IF p_held @> jsonb_build_array(stored) THEN
        RETURN stored;
    END IF;
    RAISE EXCEPTION 'field %: attach a file with the uploadToken POST /assets answered, not by its sha256', p_field
        USING ERRCODE = 'CN004';
END
$$;
COMMENT ON FUNCTION canopy.attach_asset(text, jsonb, jsonb) IS 'The stored form of one ASSET value of a saved record: an upload token of the caller''s, unused and unexpired (then marked used), or an asset the record already held.';

CREATE OR REPLACE FUNCTION canopy.records_attach_assets() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key text;
    value jsonb;
    elements jsonb;
    held jsonb := '[]';
BEGIN
    IF TG_OP = 'UPDATE' THEN
        SELECT coalesce(jsonb_agg(v), '[]') INTO held
          FROM jsonb_path_query(OLD.fields, 'lax $.*.** ? (@.type == "ASSET")') v;
    END IF;
    FOR key, value IN SELECT e.key, e.value FROM jsonb_each(NEW.fields) e LOOP
        IF jsonb_typeof(value) = 'object' AND value->>'type' = 'ASSET' THEN
            NEW.fields := jsonb_set(NEW.fields, ARRAY[key], canopy.attach_asset(key, value, held));
        ELSIF jsonb_typeof(value) = 'array' AND jsonb_path_exists(value, 'lax $[*] ? (@.type == "ASSET")') THEN
            SELECT jsonb_agg(CASE WHEN x.element->>'type' = 'ASSET' THEN canopy.attach_asset(key, x.element, held) ELSE x.element END
                             ORDER BY x.position)
              INTO elements FROM jsonb_array_elements(value) WITH ORDINALITY x(element, position);
            NEW.fields := jsonb_set(NEW.fields, ARRAY[key], elements);
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;

-- Only rows whose fields hold an asset pay for the function call.
DROP TRIGGER IF EXISTS records_attach_assets ON canopy.records;
CREATE TRIGGER records_attach_assets BEFORE INSERT OR UPDATE OF fields ON canopy.records
    FOR EACH ROW WHEN (NEW.fields @? 'lax $.*.** ? (@.type == "ASSET")')
    EXECUTE FUNCTION canopy.records_attach_assets();

REVOKE ALL ON FUNCTION canopy.attach_asset(text, jsonb, jsonb) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.records_attach_assets() FROM PUBLIC, canopy_gateway;
