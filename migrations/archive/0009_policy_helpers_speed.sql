-- The write path's cost, measured (docs/BENCHMARK_NOTES.md, W3): saving
-- 400 records spent about half its time in the row-level security helpers
-- and in canopy.current_user_id(), called once per statement and per row.
--
-- * canopy.current_user_id(), field_type_accepts() and field_value_type()
--   lose their SET search_path: they are not SECURITY DEFINER, everything
--   they call is in pg_catalog, which is always searched first, and without
--   the SET PostgreSQL inlines the SQL ones instead of calling them (5,606
--   calls of current_user_id for one batch) and calls the PL/pgSQL one
--   without saving and restoring a setting each time.
-- * The policies' helper functions become PL/pgSQL with the same bodies,
--   rights and search_path: a SQL-language function with SET is planned
--   anew on every call; PL/pgSQL keeps its plan for the session.

SET LOCAL ROLE canopy_owner;

ALTER FUNCTION canopy.current_user_id() RESET search_path;
ALTER FUNCTION canopy.field_type_accepts(text, text) RESET search_path;
ALTER FUNCTION canopy.field_value_type(text, jsonb) RESET search_path;

CREATE OR REPLACE FUNCTION canopy.owned_zone_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(z.id), '{}') FROM canopy.zones z WHERE z.owner_id = canopy.current_user_id()
    );
END
$$;

CREATE OR REPLACE FUNCTION canopy.owned_share_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(s.id), '{}')
          FROM canopy.shares s JOIN canopy.zones z ON z.id = s.zone_id
         WHERE z.owner_id = canopy.current_user_id()
    );
END
$$;

CREATE OR REPLACE FUNCTION canopy.member_share_ids(p_write boolean) RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(p.share_id), '{}')
          FROM canopy.participants p
         WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
           AND (NOT p_write OR p.permission = 'READ_WRITE')
    );
END
$$;

CREATE OR REPLACE FUNCTION canopy.admin_share_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(p.share_id), '{}')
          FROM canopy.participants p
         WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role = 'ADMINISTRATOR'
    );
END
$$;

CREATE OR REPLACE FUNCTION canopy.member_zone_ids(p_write boolean) RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(s.zone_id), '{}')
          FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
         WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
           AND s.root_record_id IS NULL
           AND (NOT p_write OR p.permission = 'READ_WRITE')
    );
END
$$;

CREATE OR REPLACE FUNCTION canopy.member_record_share_ids(p_write boolean) RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(s.id), '{}')
          FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
         WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
           AND s.root_record_id IS NOT NULL
           AND (NOT p_write OR p.permission = 'READ_WRITE')
    );
END
$$;

CREATE OR REPLACE FUNCTION canopy.member_any_zone_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(DISTINCT s.zone_id), '{}')
          FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
         WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
    );
END
$$;

CREATE OR REPLACE FUNCTION canopy.member_root_record_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(s.root_record_id), '{}')
          FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
         WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
           AND s.root_record_id IS NOT NULL
    );
END
$$;

CREATE OR REPLACE FUNCTION canopy.visible_user_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(DISTINCT p.user_id), '{}')
          FROM canopy.participants p
         WHERE p.user_id IS NOT NULL
           AND (p.share_id = ANY (canopy.owned_share_ids())
                OR p.share_id = ANY (canopy.admin_share_ids())
                OR (p.share_id = ANY (canopy.member_share_ids(false)) AND p.role = 'OWNER'))
    );
END
$$;
