-- Row-level security: the permission table of API.md §1, enforced here.
--
-- Every policy for the gateway is written as `column = ANY ((SELECT f()))`:
-- the uncorrelated subquery becomes an InitPlan that runs once per
-- statement, and `=` on bigint is leakproof, so PostgreSQL can use it as an
-- index condition. The f() are SECURITY DEFINER functions that compute, for
-- canopy.current_user_id(), the ids the caller may reach; they read the
-- tables as canopy_owner, so no policy ever recurses into another.
--
-- Policies for canopy_gateway implement the API; the canopy_owner_all
-- policies exist because FORCE ROW LEVEL SECURITY applies to the owner too,
-- and only the owner's SECURITY DEFINER functions act as it.
SET LOCAL ROLE canopy_owner;

-- Zones the caller owns.
CREATE FUNCTION canopy.owned_zone_ids() RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(z.id), '{}') FROM canopy.zones z WHERE z.owner_id = canopy.current_user_id()
$$;

-- Shares in zones the caller owns.
CREATE FUNCTION canopy.owned_share_ids() RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(s.id), '{}')
      FROM canopy.shares s JOIN canopy.zones z ON z.id = s.zone_id
     WHERE z.owner_id = canopy.current_user_id()
$$;

-- Shares the caller accepted as a participant (not as their owner);
-- p_write: only those with READ_WRITE permission.
CREATE FUNCTION canopy.member_share_ids(p_write boolean) RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(p.share_id), '{}')
      FROM canopy.participants p
     WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
       AND (NOT p_write OR p.permission = 'READ_WRITE')
$$;

-- Shares the caller accepted as an ADMINISTRATOR.
CREATE FUNCTION canopy.admin_share_ids() RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(p.share_id), '{}')
      FROM canopy.participants p
     WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role = 'ADMINISTRATOR'
$$;

-- Zones covered by a zone-wide share the caller accepted.
CREATE FUNCTION canopy.member_zone_ids(p_write boolean) RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(s.zone_id), '{}')
      FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
     WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
       AND s.root_record_id IS NULL
       AND (NOT p_write OR p.permission = 'READ_WRITE')
$$;

-- Record-rooted shares the caller accepted (matched against records.share_id).
CREATE FUNCTION canopy.member_record_share_ids(p_write boolean) RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(s.id), '{}')
      FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
     WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
       AND s.root_record_id IS NOT NULL
       AND (NOT p_write OR p.permission = 'READ_WRITE')
$$;

-- Zones holding any share the caller accepted (what zones(scope: SHARED) lists).
CREATE FUNCTION canopy.member_any_zone_ids() RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(DISTINCT s.zone_id), '{}')
      FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
     WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
$$;

-- Root records of the record-rooted shares the caller accepted: only the
-- owner deletes a root.
CREATE FUNCTION canopy.member_root_record_ids() RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(s.root_record_id), '{}')
      FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
     WHERE p.user_id = canopy.current_user_id() AND p.status = 'ACCEPTED' AND p.role <> 'OWNER'
       AND s.root_record_id IS NOT NULL
$$;

-- Users the caller may see besides themselves: everyone listed in the
-- participant rows the caller may see (owners of shares they accepted,
-- everyone in shares they own or administer).
CREATE FUNCTION canopy.visible_user_ids() RETURNS bigint[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(DISTINCT p.user_id), '{}')
      FROM canopy.participants p
     WHERE p.user_id IS NOT NULL
       AND (p.share_id = ANY (canopy.owned_share_ids())
            OR p.share_id = ANY (canopy.admin_share_ids())
            OR (p.share_id = ANY (canopy.member_share_ids(false)) AND p.role = 'OWNER'))
$$;

-- Authentication: the gateway looks a bearer token up by its public selector
-- and compares the secret's SHA-256 itself, in constant time. It cannot read
-- canopy.api_tokens otherwise.
CREATE FUNCTION canopy.token_for_selector(p_selector text, OUT user_id bigint, OUT secret_hash bytea)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.user_id, t.secret_hash FROM canopy.api_tokens t WHERE t.selector = p_selector
$$;

-- A participant who is neither the zone owner nor an accepted administrator
-- of the share may change their own row only to leave (status REMOVED).
-- Runs as the caller, so it sees what the caller's policies let it see.
CREATE FUNCTION canopy.participants_guard_self_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_user <> 'canopy_gateway' THEN
        RETURN NEW;
    END IF;
    IF NEW.share_id = ANY (canopy.owned_share_ids()) OR NEW.share_id = ANY (canopy.admin_share_ids()) THEN
        RETURN NEW;
    END IF;
    IF NEW.share_id <> OLD.share_id OR NEW.user_id IS DISTINCT FROM OLD.user_id
       OR NEW.email IS DISTINCT FROM OLD.email OR NEW.phone IS DISTINCT FROM OLD.phone
       OR NEW.role <> OLD.role OR NEW.permission <> OLD.permission OR NEW.status <> 'REMOVED' THEN
        RAISE EXCEPTION 'a participant may only leave a share' USING ERRCODE = 'CN005';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER participants_guard_self_update BEFORE UPDATE ON canopy.participants
    FOR EACH ROW EXECUTE FUNCTION canopy.participants_guard_self_update();

-- ENABLE and FORCE on every table.
ALTER TABLE canopy.users ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.users FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.api_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.api_tokens FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.zones ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.zones FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.records ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.records FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.shares FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.participants ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.participants FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.tombstones FORCE ROW LEVEL SECURITY;

-- The owner's own functions (triggers, the helpers above) see every row.
CREATE POLICY canopy_owner_all ON canopy.users TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY canopy_owner_all ON canopy.api_tokens TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY canopy_owner_all ON canopy.zones TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY canopy_owner_all ON canopy.records TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY canopy_owner_all ON canopy.shares TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY canopy_owner_all ON canopy.participants TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY canopy_owner_all ON canopy.tombstones TO canopy_owner USING (true) WITH CHECK (true);
-- canopy.schema_migrations has no policy: nobody but the migrator (an
-- administrator, who bypasses RLS) reads or writes it.

-- users: yourself, and the users of shares you take part in. Accounts are
-- created by `canopy users add` (an administrator), never by the gateway.
CREATE POLICY users_select ON canopy.users FOR SELECT TO canopy_gateway
    USING (id = (SELECT canopy.current_user_id()) OR id = ANY ((SELECT canopy.visible_user_ids())::bigint[]));

-- api_tokens: your own tokens' metadata (the hash column is not granted).
CREATE POLICY api_tokens_select ON canopy.api_tokens FOR SELECT TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));
CREATE POLICY api_tokens_delete ON canopy.api_tokens FOR DELETE TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));

-- zones: owners do everything but delete their _defaultZone; accepted
-- participants of any share in the zone see it.
CREATE POLICY zones_select ON canopy.zones FOR SELECT TO canopy_gateway
    USING (owner_id = (SELECT canopy.current_user_id()) OR id = ANY ((SELECT canopy.member_any_zone_ids())::bigint[]));
CREATE POLICY zones_insert ON canopy.zones FOR INSERT TO canopy_gateway
    WITH CHECK (owner_id = (SELECT canopy.current_user_id()));
CREATE POLICY zones_delete ON canopy.zones FOR DELETE TO canopy_gateway
    USING (owner_id = (SELECT canopy.current_user_id()) AND name <> '_defaultZone');

-- records: the owner of the zone; accepted participants of a zone-wide share
-- of the zone or of the record-rooted share the record is in (share_id);
-- writing needs READ_WRITE; only the owner deletes a share's root.
CREATE POLICY records_select ON canopy.records FOR SELECT TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(false))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(false))::bigint[]));
CREATE POLICY records_insert ON canopy.records FOR INSERT TO canopy_gateway
    WITH CHECK (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(true))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(true))::bigint[]));
CREATE POLICY records_update ON canopy.records FOR UPDATE TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(true))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(true))::bigint[]))
    WITH CHECK (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(true))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(true))::bigint[]));
CREATE POLICY records_delete ON canopy.records FOR DELETE TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR ((zone_id = ANY ((SELECT canopy.member_zone_ids(true))::bigint[])
             OR share_id = ANY ((SELECT canopy.member_record_share_ids(true))::bigint[]))
            AND id <> ALL ((SELECT canopy.member_root_record_ids())::bigint[])));

-- shares: the zone owner does everything; accepted participants read.
CREATE POLICY shares_select ON canopy.shares FOR SELECT TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]) OR id = ANY ((SELECT canopy.member_share_ids(false))::bigint[]));
CREATE POLICY shares_insert ON canopy.shares FOR INSERT TO canopy_gateway
    WITH CHECK (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]));
CREATE POLICY shares_update ON canopy.shares FOR UPDATE TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]))
    WITH CHECK (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]));
CREATE POLICY shares_delete ON canopy.shares FOR DELETE TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]));

-- participants: the owner manages everyone but the OWNER row; accepted
-- administrators manage PRIVATE_USERs and see the whole list; other accepted
-- participants see the owner and themselves, and may leave (their own row to
-- REMOVED, guarded by participants_guard_self_update; a PUBLIC_USER's row
-- is deleted so the link can be used again).
CREATE POLICY participants_select ON canopy.participants FOR SELECT TO canopy_gateway
    USING (share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[])
        OR share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[])
        OR (share_id = ANY ((SELECT canopy.member_share_ids(false))::bigint[])
            AND (role = 'OWNER' OR user_id = (SELECT canopy.current_user_id()))));
CREATE POLICY participants_insert ON canopy.participants FOR INSERT TO canopy_gateway
    WITH CHECK ((share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) AND role <> 'OWNER')
        OR (share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) AND role = 'PRIVATE_USER'));
CREATE POLICY participants_update ON canopy.participants FOR UPDATE TO canopy_gateway
    USING ((share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) AND role <> 'OWNER')
        OR (share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) AND role = 'PRIVATE_USER')
        OR (share_id = ANY ((SELECT canopy.member_share_ids(false))::bigint[]) AND user_id = (SELECT canopy.current_user_id())))
    WITH CHECK ((share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) AND role <> 'OWNER')
        OR (share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) AND role = 'PRIVATE_USER')
        OR (user_id = (SELECT canopy.current_user_id()) AND status = 'REMOVED'));
CREATE POLICY participants_delete ON canopy.participants FOR DELETE TO canopy_gateway
    USING ((share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) AND role <> 'OWNER')
        OR (share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) AND role = 'PRIVATE_USER')
        OR (share_id = ANY ((SELECT canopy.member_share_ids(false))::bigint[])
            AND user_id = (SELECT canopy.current_user_id()) AND role = 'PUBLIC_USER'));

-- tombstones: whoever could read the record. Written by trigger only.
CREATE POLICY tombstones_select ON canopy.tombstones FOR SELECT TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(false))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(false))::bigint[]));

-- Grants: only what the gateway needs. Columns the triggers maintain
-- (change tags, stamps, share membership) are not writable by it.
GRANT SELECT (id, record_name, name, email, phone) ON canopy.users TO canopy_gateway;
GRANT SELECT (id, user_id, selector, created_at), DELETE ON canopy.api_tokens TO canopy_gateway;
GRANT SELECT, DELETE ON canopy.zones TO canopy_gateway;
GRANT INSERT (owner_id, name) ON canopy.zones TO canopy_gateway;
GRANT SELECT, DELETE ON canopy.records TO canopy_gateway;
GRANT INSERT (zone_id, record_name, record_type, fields, parent_name) ON canopy.records TO canopy_gateway;
GRANT UPDATE (record_type, fields, parent_name) ON canopy.records TO canopy_gateway;
GRANT SELECT, DELETE ON canopy.shares TO canopy_gateway;
GRANT INSERT (zone_id, root_record_id, title, public_permission) ON canopy.shares TO canopy_gateway;
GRANT UPDATE (title, public_permission, modified_at) ON canopy.shares TO canopy_gateway;
GRANT SELECT, DELETE ON canopy.participants TO canopy_gateway;
GRANT INSERT (share_id, user_id, email, phone, role, permission, status) ON canopy.participants TO canopy_gateway;
GRANT UPDATE (user_id, role, permission, status, accepted_at) ON canopy.participants TO canopy_gateway;
GRANT SELECT ON canopy.tombstones TO canopy_gateway;

-- Functions: nobody executes them unless granted; the gateway gets the ones
-- its policies call, and token lookup.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA canopy FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    canopy.current_user_id(), canopy.owned_zone_ids(), canopy.owned_share_ids(),
    canopy.member_share_ids(boolean), canopy.admin_share_ids(), canopy.member_zone_ids(boolean),
    canopy.member_record_share_ids(boolean), canopy.member_any_zone_ids(),
    canopy.member_root_record_ids(), canopy.visible_user_ids(), canopy.token_for_selector(text)
    TO canopy_gateway;
ALTER DEFAULT PRIVILEGES FOR ROLE canopy_owner IN SCHEMA canopy REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
