-- The public database's grants (docs/API.md §15, migrations/0025): which record
-- types the caller may READ, CREATE or WRITE there, for the policies of
-- canopy.records and canopy.tombstones. Each policy calls these as
-- `(SELECT canopy.f(...))`, an InitPlan: the caller's roles are resolved
-- once per statement, not once per row.
--
-- A record type with no row in canopy.record_type_grants gets CloudKit's
-- defaults (READ to _world, CREATE to _icloud, WRITE to _creator), which
-- the policies spell out for types outside canopy.granted_record_types().
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

-- The public database's one zone (owner 0, migrations/0038).
CREATE OR REPLACE FUNCTION canopy.public_zone_id() RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT z.id FROM canopy.zones z WHERE z.owner_id = 0);
END
$$;
COMMENT ON FUNCTION canopy.public_zone_id() IS 'The id of the public database''s zone (_defaultZone of the reserved owner 0).';

-- Record types that have grants of their own (the others get the defaults).
CREATE OR REPLACE FUNCTION canopy.granted_record_types() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg(DISTINCT g.record_type), '{}') FROM canopy.record_type_grants g);
END
$$;
COMMENT ON FUNCTION canopy.granted_record_types() IS 'Record types with at least one GRANT; the others get CloudKit''s default grants.';

-- Record types whose grants give the caller p_privilege: through _world,
-- _icloud (signed in) or a custom role the caller was given, or, with
-- p_as_creator, through _creator (which then holds for the records the
-- caller created; nobody, signed out).
CREATE OR REPLACE FUNCTION canopy.public_record_types(p_privilege text, p_as_creator boolean) RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    me bigint := canopy.current_user_id();
BEGIN
    IF p_as_creator THEN
        IF me IS NULL THEN
            RETURN '{}';
        END IF;
        RETURN (SELECT coalesce(array_agg(DISTINCT g.record_type), '{}') FROM canopy.record_type_grants g
                 WHERE g.privilege = p_privilege AND g.role_name = '_creator');
    END IF;
    RETURN (SELECT coalesce(array_agg(DISTINCT g.record_type), '{}') FROM canopy.record_type_grants g
             WHERE g.privilege = p_privilege
               AND (g.role_name = '_world'
                    OR (me IS NOT NULL AND (g.role_name = '_icloud'
                        OR EXISTS (SELECT 1 FROM canopy.role_members rm WHERE rm.role_name = g.role_name AND rm.user_id = me)))));
END
$$;
COMMENT ON FUNCTION canopy.public_record_types(text, boolean) IS 'Record types whose grants give the current user READ, CREATE or WRITE in the public database: by _world, _icloud or a custom role (false), or by _creator (true).';

REVOKE ALL ON FUNCTION canopy.public_zone_id() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.granted_record_types() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.public_record_types(text, boolean) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.public_zone_id() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.granted_record_types() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.public_record_types(text, boolean) TO canopy_gateway;
