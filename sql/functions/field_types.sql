-- Field types (docs/API.md §4): the type of a field value, whether a declared
-- type accepts it, and the inlinable fast path for common values. Used by
-- the records_check_written_fields trigger (sql/triggers/records.sql).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0005, 0009 and 0010.
--
-- field_value_type and field_type_accepts have no SET search_path
-- (archive/0009): not SECURITY DEFINER, and they call only pg_catalog.

SET LOCAL ROLE canopy_owner;

-- The type of one field value, or CN004 naming the field. Lists of one
-- type; an empty list is 'LIST' (its element type unknown).
CREATE OR REPLACE FUNCTION canopy.field_value_type(p_field text, p_value jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
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
            -- Both ends of bigint: -2^63 is an INT64 too (issue 48).
            IF number > 9223372036854775807 OR number < -9223372036854775808 THEN
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
            -- CloudKit's Location Dictionary (issue 49): latitude and
            -- longitude, and optionally the six other keys, each a number
            -- (timestamp in ms since the epoch).
            IF jsonb_typeof(p_value->'latitude') IS DISTINCT FROM 'number' OR jsonb_typeof(p_value->'longitude') IS DISTINCT FROM 'number'
               OR abs((p_value->>'latitude')::float8) > 90 OR abs((p_value->>'longitude')::float8) > 180
               OR EXISTS (SELECT 1 FROM jsonb_each(p_value - 'type' - 'latitude' - 'longitude') e
                           WHERE e.key NOT IN ('horizontalAccuracy', 'verticalAccuracy', 'altitude', 'speed', 'course', 'timestamp')
                              OR jsonb_typeof(e.value) <> 'number') THEN
                RAISE EXCEPTION 'field %: a LOCATION is {"type":"LOCATION","latitude":-90..90,"longitude":-180..180} and optionally horizontalAccuracy, verticalAccuracy, altitude, speed, course and timestamp (ms), each a number', p_field USING ERRCODE = 'CN004';
            END IF;
        WHEN 'BYTES' THEN
            IF jsonb_typeof(p_value->'base64') IS DISTINCT FROM 'string'
               OR p_value->>'base64' !~ '^[A-Za-z0-9+/]*={0,2}$' OR length(p_value->>'base64') % 4 <> 0
               OR (p_value - 'type' - 'base64') <> '{}' THEN
                RAISE EXCEPTION 'field %: BYTES are {"type":"BYTES","base64":"..."} with valid base64', p_field USING ERRCODE = 'CN004';
            END IF;
        WHEN 'ASSET' THEN
            -- Stored form only: canopy.records_attach_assets (BEFORE the
            -- write) has turned an uploadToken into it, or checked it is
            -- an asset the record already held.
            IF p_value->>'sha256' !~ '^[0-9a-f]{64}$' OR jsonb_typeof(p_value->'size') IS DISTINCT FROM 'number'
               OR jsonb_typeof(p_value->'contentType') IS DISTINCT FROM 'string'
               OR (p_value - 'type' - 'sha256' - 'size' - 'contentType') <> '{}' THEN
                RAISE EXCEPTION 'field %: an ASSET is saved as {"type":"ASSET","uploadToken":"upl_…"} (POST /assets answers the token)', p_field
                    USING ERRCODE = 'CN004';
            END IF;
        ELSE
            RAISE EXCEPTION 'field %: an object value must have "type" TIMESTAMP, REFERENCE, LOCATION, BYTES or ASSET', p_field USING ERRCODE = 'CN004';
        END CASE;
        RETURN p_value->>'type';
    ELSE
        RAISE EXCEPTION 'field %: null is not a value (leave the field out)', p_field USING ERRCODE = 'CN004';
    END CASE;
END
$$;

-- Whether a field of type p_declared accepts a value of type p_value.
CREATE OR REPLACE FUNCTION canopy.field_type_accepts(p_declared text, p_value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT p_declared = p_value
        OR (p_declared = 'DOUBLE' AND p_value = 'INT64')
        OR (p_declared = 'LIST<DOUBLE>' AND p_value = 'LIST<INT64>')
        OR (p_declared LIKE 'LIST<%' AND p_value = 'LIST')
$$;

-- The type of the values most fields hold (strings, booleans, integers,
-- decimals, timestamps, lists of strings), without a function call: an
-- expression PostgreSQL inlines. NULL for anything else, which
-- canopy.field_value_type then types or refuses with its full checks.
CREATE OR REPLACE FUNCTION canopy.plain_value_type(p_value jsonb) RETURNS text
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

REVOKE ALL ON FUNCTION canopy.field_value_type(text, jsonb) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.field_type_accepts(text, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.plain_value_type(jsonb) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.field_value_type(text, jsonb) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.field_type_accepts(text, text) TO canopy_gateway;
