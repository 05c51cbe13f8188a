-- CloudKit Web Services' record dictionary, written by PostgreSQL (issue
-- 49): a stored field value as the reference's typed field value
-- `{"value": …, "type": …}`, as JSON text. The planner's CloudKit
-- projection (Server/Sources/CanopyPlanner/Plans/Projection+CloudKit.swift)
-- writes a declared field of a query's record type inline, with the tag
-- its schema gives; canopy.cloudkit_field writes any other field (a
-- lookup's records, whose types the plan does not know, and the kinds
-- of value that need more than a copy). So a Web Services answer is
-- PostgreSQL's text with a wrapper, as a GraphQL answer is.
--
-- p_declared is the field's type in canopy.field_types (INT64, DOUBLE,
-- LIST<DOUBLE>, …; NULL when unknown): it decides what JSON alone cannot,
-- a whole DOUBLE and the tag of an empty list. p_strings is the request's
-- numbersAsStrings.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. New in issue 49;
-- it replaces the gateway's WebServicesRecordText, which wrote the same
-- dictionaries from GraphQL's answer.

SET LOCAL ROLE canopy_owner;

-- A number's JSON as the reference writes it with numbersAsStrings: an
-- INT64 as its digits, a DOUBLE as Swift and JavaScript print it (a whole
-- one with ".0").
CREATE OR REPLACE FUNCTION canopy.cloudkit_number_text(p_number jsonb, p_double boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN NOT p_double THEN trunc(p_number::text::numeric)::text
        WHEN p_number::text::float8 = trunc(p_number::text::float8) AND abs(p_number::text::float8) < 1e16
            THEN trunc(p_number::text::float8)::text || '.0'
        ELSE p_number::text::float8::text
    END
$$;
COMMENT ON FUNCTION canopy.cloudkit_number_text(jsonb, boolean) IS 'A JSON number as CloudKit Web Services writes it with numbersAsStrings (issue 49).';

-- Whether a number is a DOUBLE: declared so, or written with a fraction or
-- an exponent where the type is not declared INT64.
CREATE OR REPLACE FUNCTION canopy.cloudkit_is_double(p_number jsonb, p_declared text) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT p_declared = 'DOUBLE' OR (p_declared IS DISTINCT FROM 'INT64' AND p_number::text ~ '[.eE]')
$$;
COMMENT ON FUNCTION canopy.cloudkit_is_double(jsonb, text) IS 'Whether a stored number is answered as a DOUBLE over CloudKit Web Services (issue 49).';

-- One stored scalar (not a list) as the reference's bare value, JSON text.
-- p_declared is the scalar's own type (a list's element type).
CREATE OR REPLACE FUNCTION canopy.cloudkit_value(p_value jsonb, p_declared text, p_strings boolean) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE jsonb_typeof(p_value)
        WHEN 'boolean' THEN CASE WHEN p_value = 'true'::jsonb
            THEN CASE WHEN p_strings THEN '"1"' ELSE '1' END
            ELSE CASE WHEN p_strings THEN '"0"' ELSE '0' END END
        WHEN 'number' THEN CASE
            WHEN p_strings THEN to_json(canopy.cloudkit_number_text(p_value, canopy.cloudkit_is_double(p_value, p_declared)))::text
            WHEN p_declared = 'INT64' AND p_value::text ~ '[.eE]' THEN trunc(p_value::text::numeric)::text
            ELSE p_value::text END
        WHEN 'object' THEN CASE p_value->>'type'
            WHEN 'TIMESTAMP' THEN (p_value->'value')::text
            WHEN 'BYTES' THEN (p_value->'base64')::text
            WHEN 'REFERENCE' THEN json_build_object('recordName', p_value->'recordName', 'action', coalesce(p_value->'action', '"NONE"'::jsonb))::text
            WHEN 'LOCATION' THEN (p_value - 'type')::text
            -- contentType is Canopy's: the gateway signs the downloadURL it
            -- adds with it (AssetURLSigner), as it does for GraphQL's answers.
            -- The digest carries the session's asset marker (asset_marks.sql):
            -- the gateway signs only what the database typed as an asset.
            WHEN 'ASSET' THEN json_build_object('fileChecksum', coalesce(current_setting('canopy.asset_marker', true), '') || (p_value->>'sha256'),
                                                'size', p_value->'size', 'contentType', p_value->'contentType')::text
            ELSE p_value::text END
        ELSE p_value::text
    END
$$;
COMMENT ON FUNCTION canopy.cloudkit_value(jsonb, text, boolean) IS 'A stored scalar field value as CloudKit Web Services'' bare value, JSON text (issue 49).';

-- A scalar's type tag; for NULL, the tag of the declared type (an empty list's).
CREATE OR REPLACE FUNCTION canopy.cloudkit_tag(p_value jsonb, p_declared text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE jsonb_typeof(p_value)
        WHEN 'string' THEN 'STRING'
        WHEN 'boolean' THEN 'INT64'
        WHEN 'number' THEN CASE WHEN canopy.cloudkit_is_double(p_value, p_declared) THEN 'DOUBLE' ELSE 'INT64' END
        WHEN 'object' THEN CASE p_value->>'type' WHEN 'ASSET' THEN 'ASSETID' ELSE p_value->>'type' END
        ELSE CASE p_declared
            WHEN 'BOOLEAN' THEN 'INT64' WHEN 'ASSET' THEN 'ASSETID' ELSE coalesce(p_declared, 'STRING') END
    END
$$;
COMMENT ON FUNCTION canopy.cloudkit_tag(jsonb, text) IS 'The CloudKit Web Services type tag of a stored scalar field value (issue 49).';

-- A list field as the reference's typed field value, JSON text: element
-- by element, tagged <element type>_LIST (the last element's, as the
-- reference's examples). A list of strings or numbers that need no change
-- is its own text; others go element by element, in PL/pgSQL, where a
-- loop costs less than a subquery with an aggregate in SQL.
CREATE OR REPLACE FUNCTION canopy.cloudkit_list(p_value jsonb, p_declared text, p_strings boolean) RETURNS text
    LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
    element_type text := substring(p_declared FROM '^LIST<(.*)>$');
    tag text := canopy.cloudkit_tag(NULL, element_type);
    items text[] := '{}';
    item jsonb;
BEGIN
    IF jsonb_array_length(p_value) > 0 THEN
        tag := canopy.cloudkit_tag(p_value->-1, element_type);
    END IF;
    IF NOT p_strings AND element_type IS DISTINCT FROM 'BOOLEAN'
       AND NOT jsonb_path_exists(p_value, '$[*] ? (@.type() == "object" || @.type() == "boolean")')
       AND NOT (element_type = 'INT64' AND p_value::text ~ '[.eE]') THEN
        RETURN '{"value":' || p_value::text || ',"type":"' || tag || '_LIST"}';
    END IF;
    FOR item IN SELECT e FROM jsonb_array_elements(p_value) e LOOP
        items := items || canopy.cloudkit_value(item, element_type, p_strings);
    END LOOP;
    RETURN '{"value":[' || array_to_string(items, ',') || '],"type":"' || tag || '_LIST"}';
END
$$;
COMMENT ON FUNCTION canopy.cloudkit_list(jsonb, text, boolean) IS 'A stored list field value as CloudKit Web Services'' typed field value {value, type}, JSON text (issue 49).';

-- A field as the reference's typed field value, JSON text:
-- {"value":…,"type":"…"}; NULL for NULL (an absent field, left out).
CREATE OR REPLACE FUNCTION canopy.cloudkit_field(p_value jsonb, p_declared text, p_strings boolean) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN jsonb_typeof(p_value) = 'array' THEN canopy.cloudkit_list(p_value, p_declared, p_strings)
        ELSE '{"value":' || canopy.cloudkit_value(p_value, p_declared, p_strings)
            || ',"type":"' || canopy.cloudkit_tag(p_value, p_declared) || '"}'
    END
$$;
COMMENT ON FUNCTION canopy.cloudkit_field(jsonb, text, boolean) IS 'A stored field value as CloudKit Web Services'' typed field value {value, type}, JSON text (issue 49).';

REVOKE ALL ON FUNCTION canopy.cloudkit_number_text(jsonb, boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.cloudkit_is_double(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.cloudkit_value(jsonb, text, boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.cloudkit_tag(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.cloudkit_list(jsonb, text, boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.cloudkit_field(jsonb, text, boolean) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_number_text(jsonb, boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_is_double(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_value(jsonb, text, boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_tag(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_list(jsonb, text, boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_field(jsonb, text, boolean) TO canopy_gateway;
