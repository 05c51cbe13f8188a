-- The row-level security helpers: the SECURITY DEFINER functions the
-- policies of shares and participants (and a few functions) call as
-- `column = ANY ((SELECT canopy.f()))`, each computing, for
-- canopy.current_user_id(), the ids the caller may reach; since
-- migrations/0014 they read canopy.memberships instead of joining
-- participants and shares. The hot policies (records, tombstones, zones,
-- users) probe canopy.memberships row by row instead.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004, 0009 and 0011.
-- canopy.visible_user_ids() (archive/0011) is gone: migrations/0014 drops
-- it; users_select calls canopy.shares_managed_with() instead.
-- member_zone_ids, member_record_share_ids and member_any_zone_ids are gone
-- too: no policy has called them since memberships (0014), and
-- migrations/0021 drops them.
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
        SELECT coalesce(array_agg(z.id), '{}') FROM canopy.zones z WHERE z.owner_id = canopy.current_user_id() AND z.owner_id <> 0
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
         WHERE z.owner_id = canopy.current_user_id() AND z.owner_id <> 0
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
        SELECT coalesce(array_agg(m.share_id), '{}')
          FROM canopy.memberships m
         WHERE m.user_id = canopy.current_user_id() AND m.share_id IS NOT NULL AND m.role <> 'OWNER'
           AND (NOT p_write OR m.can_write)
    );
END
$$;

-- Shares the caller accepted as an ADMINISTRATOR.
CREATE OR REPLACE FUNCTION canopy.admin_share_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(m.share_id), '{}')
          FROM canopy.memberships m
         WHERE m.user_id = canopy.current_user_id() AND m.role = 'ADMINISTRATOR'
    );
END
$$;

-- Shares the caller accepted as an ADMINISTRATOR with READ_WRITE: only
-- there may they give READ_WRITE (issue 64: an administrator never grants
-- more than they have).
CREATE OR REPLACE FUNCTION canopy.writing_admin_share_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(m.share_id), '{}')
          FROM canopy.memberships m
         WHERE m.user_id = canopy.current_user_id() AND m.role = 'ADMINISTRATOR' AND m.can_write
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
        SELECT coalesce(array_agg(m.root_record_id), '{}')
          FROM canopy.memberships m
         WHERE m.user_id = canopy.current_user_id() AND m.role <> 'OWNER'
           AND m.root_record_id IS NOT NULL
    );
END
$$;

-- Whether p_user_id takes part, in any status, in a share the caller owns
-- or administers: the half of users_select (sql/policies/users.sql) that
-- needs participants, which the gateway's own policies would make costly to
-- read there. Driven by the other user's participant rows, each probing the
-- caller's memberships by share. Replaces canopy.visible_user_ids()
-- (archive/0011), which gathered every user the caller could see in each
-- statement (dropped by migrations/0014).
CREATE OR REPLACE FUNCTION canopy.shares_managed_with(p_user_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN EXISTS (
        SELECT 1 FROM canopy.participants p
         WHERE p.user_id = p_user_id
           AND EXISTS (SELECT 1 FROM canopy.memberships mine
                        WHERE mine.user_id = canopy.current_user_id() AND mine.share_id = p.share_id
                          AND mine.role IN ('OWNER', 'ADMINISTRATOR'))
    );
END
$$;

REVOKE ALL ON FUNCTION canopy.owned_zone_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.owned_share_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.member_share_ids(boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.admin_share_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.writing_admin_share_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.member_root_record_ids() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.shares_managed_with(bigint) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.owned_zone_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.owned_share_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.member_share_ids(boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.admin_share_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.writing_admin_share_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.member_root_record_ids() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.shares_managed_with(bigint) TO canopy_gateway;
