-- Asset values marked for the gateway's download-URL signer (issue 64).
--
-- The gateway signs a downloadURL into an answer only for a value the
-- database typed as an asset, in a record's fields: never for anything an
-- answer's text merely looks like (a record's plain STRING fields named
-- type and sha256, a GraphQL alias, a Web Services field called
-- fileChecksum). So the SQL that writes records' fields into an answer
-- prefixes each stored asset's digest with a secret the gateway chose at
-- start and set on its connections (the startup parameter
-- canopy.asset_marker, random per process, never answered to anyone); the
-- gateway's scanner (Server/Sources/CanopyAssets/AssetURLInsertion.swift) signs
-- exactly the values whose digest carries it and removes it from the
-- answer. A session without the setting (psql, canopy's own commands)
-- reads the plain stored form.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

-- One stored value: when it is an asset, the same with its digest marked.
CREATE OR REPLACE FUNCTION canopy.marked_asset(p_value jsonb, p_marker text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN jsonb_typeof(p_value) = 'object' AND p_value->>'type' = 'ASSET'
                     AND p_value->>'sha256' ~ '^[0-9a-f]{64}$'
        THEN jsonb_set(p_value, '{sha256}', to_jsonb(p_marker || (p_value->>'sha256')))
        ELSE p_value END
$$;
COMMENT ON FUNCTION canopy.marked_asset(jsonb, text) IS 'A stored field value, its digest prefixed with p_marker when it is an ASSET (issue 64).';
REVOKE ALL ON FUNCTION canopy.marked_asset(jsonb, text) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.marked_asset(jsonb, text) TO canopy_gateway;

-- A record's fields as the gateway answers them: every ASSET value, alone
-- or in a list, marked with the session's canopy.asset_marker; the fields
-- unchanged when they hold no asset or the session has no marker (one
-- jsonpath test a record).
CREATE OR REPLACE FUNCTION canopy.marked_fields(p_fields jsonb) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_fields @? 'lax $.*.type ? (@ == "ASSET")'
                     AND coalesce(current_setting('canopy.asset_marker', true), '') <> ''
        THEN (SELECT jsonb_object_agg(f.key, CASE jsonb_typeof(f.value)
                WHEN 'object' THEN canopy.marked_asset(f.value, current_setting('canopy.asset_marker'))
                WHEN 'array' THEN (SELECT coalesce(jsonb_agg(canopy.marked_asset(e.value, current_setting('canopy.asset_marker'))
                                                             ORDER BY e.n), '[]')
                                     FROM jsonb_array_elements(f.value) WITH ORDINALITY e(value, n))
                ELSE f.value END)
                FROM jsonb_each(p_fields) f)
        ELSE p_fields END
$$;
COMMENT ON FUNCTION canopy.marked_fields(jsonb) IS 'A record''s fields with each ASSET value''s digest marked for the gateway''s URL signer (issue 64).';
REVOKE ALL ON FUNCTION canopy.marked_fields(jsonb) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.marked_fields(jsonb) TO canopy_gateway;
