-- The row-level security helpers: the SECURITY DEFINER functions the
-- policies call as `column = ANY ((SELECT canopy.f()))`, each computing, for
-- canopy.current_user_id(), the ids the caller may reach.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004, 0009 and 0011.
--
-- * The policies' helper functions become PL/pgSQL with the same bodies,
--   rights and search_path: a SQL-language function with SET is planned
--   anew on every call; PL/pgSQL keeps its plan for the session.

SET LOCAL ROLE canopy_owner;

-- Zones the caller owns.
CREATE OR REPLACE FUNCTION canopy.owned_zone_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(z.id), '{}') FROM canopy.zones z WHERE z.owner_id = canopy.current_user_id()
    );
END
$$;

-- Shares in zones the caller owns.
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

-- Shares the caller accepted as a participant (not as their owner);
-- p_write: only those with READ_WRITE permission.
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

-- Shares the caller accepted as an ADMINISTRATOR.
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

-- Zones covered by a zone-wide share the caller accepted.
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

-- Record-rooted shares the caller accepted (matched against records.share_id).
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

-- Zones holding any share the caller accepted (what zones(scope: SHARED) lists).
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

-- Root records of the record-rooted shares the caller accepted: only the
-- owner deletes a root.
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

-- Users the caller may see besides themselves: everyone listed in the
-- participant rows the caller may see (owners of shares they accepted,
-- everyone in shares they own or administer).
--
-- canopy.visible_user_ids() (0009) called its three helpers inside its
-- WHERE clause, where PostgreSQL evaluates a STABLE function once per
-- participant row it filters: with a population of a few thousand
-- participants (make bench), a member of 40 shares paid about 8 ms for it
-- on every read that joins canopy.users, such as naming a zone's owner in
-- SHARED scope (issue 7, W5). Same result, the helpers called once each.
CREATE OR REPLACE FUNCTION canopy.visible_user_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    managed bigint[] := canopy.owned_share_ids() || canopy.admin_share_ids();
    joined bigint[] := canopy.member_share_ids(false);
BEGIN
    RETURN (
        SELECT coalesce(array_agg(DISTINCT p.user_id), '{}')
          FROM canopy.participants p
         WHERE p.user_id IS NOT NULL
           AND (p.share_id = ANY (managed)
                OR (p.share_id = ANY (joined) AND p.role = 'OWNER'))
    );
END
$$;

REVOKE ALL ON FUNCTION canopy.owned_zone_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.owned_share_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.member_share_ids(boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.admin_share_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.member_zone_ids(boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.member_record_share_ids(boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.member_any_zone_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.member_root_record_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.visible_user_ids() FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.owned_zone_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.owned_share_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.member_share_ids(boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.admin_share_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.member_zone_ids(boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.member_record_share_ids(boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.member_any_zone_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.member_root_record_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.visible_user_ids() TO canopy_gateway;
