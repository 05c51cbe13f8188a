-- CloudKit Web Services' record dictionary, written by PostgreSQL (issue
-- 49): a stored field value as the reference's typed field value
-- `{"value": …, "type": …}`. The planner's CloudKit projection
-- (Sources/CanopyPlanner/Plans/Projection+CloudKit.swift) calls
-- canopy.cloudkit_field for each field of a record, so a Web Services
-- answer is PostgreSQL's text with a wrapper, as a GraphQL answer is.
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
--
-- All three are plain SQL expressions (IMMUTABLE, no SET), so PostgreSQL
-- inlines them into the statement that calls them.

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

-- One stored scalar (not a list) as the reference's bare value, and its
-- type tag. p_declared is the scalar's own type (a list's element type).
CREATE OR REPLACE FUNCTION canopy.cloudkit_scalar(p_value jsonb, p_declared text, p_strings boolean) RETURNS json
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE jsonb_typeof(p_value)
        WHEN 'boolean' THEN CASE
            WHEN p_strings THEN to_json(CASE WHEN p_value = 'true'::jsonb THEN '1' ELSE '0' END)
            ELSE to_json(CASE WHEN p_value = 'true'::jsonb THEN 1 ELSE 0 END) END
        WHEN 'number' THEN CASE
            WHEN p_strings THEN to_json(canopy.cloudkit_number_text(p_value,
                p_declared = 'DOUBLE' OR (p_declared IS DISTINCT FROM 'INT64' AND p_value::text ~ '[.eE]')))
            WHEN p_declared = 'INT64' AND p_value::text ~ '[.eE]' THEN to_json(trunc(p_value::text::numeric))
            ELSE p_value::json END
        WHEN 'object' THEN CASE p_value->>'type'
            WHEN 'TIMESTAMP' THEN (p_value->'value')::json
            WHEN 'BYTES' THEN (p_value->'base64')::json
            WHEN 'REFERENCE' THEN json_build_object('recordName', p_value->'recordName', 'action', coalesce(p_value->'action', '"NONE"'::jsonb))
            WHEN 'LOCATION' THEN (p_value - 'type')::json
            -- contentType is Canopy's: the gateway signs the downloadURL it
            -- adds with it (AssetURLSigner), as it does for GraphQL's answers.
            WHEN 'ASSET' THEN json_build_object('fileChecksum', p_value->'sha256', 'size', p_value->'size', 'contentType', p_value->'contentType')
            ELSE p_value::json END
        ELSE p_value::json
    END
$$;
COMMENT ON FUNCTION canopy.cloudkit_scalar(jsonb, text, boolean) IS 'A stored scalar field value as CloudKit Web Services'' bare value (issue 49).';

CREATE OR REPLACE FUNCTION canopy.cloudkit_tag(p_value jsonb, p_declared text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE jsonb_typeof(p_value)
        WHEN 'string' THEN 'STRING'
        WHEN 'boolean' THEN 'INT64'
        WHEN 'number' THEN CASE
            WHEN p_declared = 'DOUBLE' OR (p_declared IS DISTINCT FROM 'INT64' AND p_value::text ~ '[.eE]') THEN 'DOUBLE'
            ELSE 'INT64' END
        WHEN 'object' THEN CASE p_value->>'type' WHEN 'ASSET' THEN 'ASSETID' ELSE p_value->>'type' END
        ELSE CASE p_declared
            WHEN 'BOOLEAN' THEN 'INT64' WHEN 'ASSET' THEN 'ASSETID' ELSE coalesce(p_declared, 'STRING') END
    END
$$;
COMMENT ON FUNCTION canopy.cloudkit_tag(jsonb, text) IS 'The CloudKit Web Services type tag of a stored scalar field value (issue 49).';

-- A field as the reference's typed field value: {"value": …, "type": …};
-- a list element by element, tagged <element type>_LIST.
CREATE OR REPLACE FUNCTION canopy.cloudkit_field(p_value jsonb, p_declared text, p_strings boolean) RETURNS json
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN jsonb_typeof(p_value) = 'array' THEN (
        SELECT json_build_object(
            'value', coalesce(json_agg(canopy.cloudkit_scalar(e.value, substring(p_declared FROM '^LIST<(.*)>$'), p_strings) ORDER BY e.ord), '[]'),
            'type', coalesce((array_agg(canopy.cloudkit_tag(e.value, substring(p_declared FROM '^LIST<(.*)>$')) ORDER BY e.ord DESC))[1],
                             canopy.cloudkit_tag('null'::jsonb, substring(p_declared FROM '^LIST<(.*)>$'))) || '_LIST')
          FROM jsonb_array_elements(p_value) WITH ORDINALITY e(value, ord))
    ELSE json_build_object('value', canopy.cloudkit_scalar(p_value, p_declared, p_strings), 'type', canopy.cloudkit_tag(p_value, p_declared))
    END
$$;
COMMENT ON FUNCTION canopy.cloudkit_field(jsonb, text, boolean) IS 'A stored field value as CloudKit Web Services'' typed field value {value, type} (issue 49).';

REVOKE ALL ON FUNCTION canopy.cloudkit_number_text(jsonb, boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.cloudkit_scalar(jsonb, text, boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.cloudkit_tag(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.cloudkit_field(jsonb, text, boolean) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_number_text(jsonb, boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_scalar(jsonb, text, boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_tag(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.cloudkit_field(jsonb, text, boolean) TO canopy_gateway;
