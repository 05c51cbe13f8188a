-- Row-level security on canopy.users: its policies (canopy_owner_all,
-- users_select) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004.
--
-- Row-level security: the permission table of docs/API.md §1, enforced here.
--
-- Two shapes of policy for the gateway. On the tables a request reads most
-- (records, tombstones, zones, users) a correlated `EXISTS (SELECT 1 FROM
-- canopy.memberships m WHERE m.user_id = (SELECT canopy.current_user_id())
-- AND ...)`: one index probe a row, whatever the number of shares the caller
-- accepted (migrations/0014; the gateway reads its caller's own membership
-- rows). Elsewhere `column = ANY ((SELECT f()))`: the uncorrelated subquery
-- becomes an InitPlan that runs once per statement, and `=` on bigint is
-- leakproof, so PostgreSQL can use it as an index condition. The f() are
-- SECURITY DEFINER functions (functions/policy_helpers.sql) that compute,
-- for canopy.current_user_id(), the ids the caller may reach; they read the
-- tables as canopy_owner, so no policy ever recurses into another.
--
-- Policies for canopy_gateway implement the API; the canopy_owner_all
-- policies exist because FORCE ROW LEVEL SECURITY applies to the owner too,
-- and only the owner's SECURITY DEFINER functions act as it.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.users;
CREATE POLICY canopy_owner_all ON canopy.users TO canopy_owner USING (true) WITH CHECK (true);

-- users: never user 0, the public zone's reserved owner (migrations/0038);
-- yourself, the owners of zones whose shares you accepted (one probe
-- of canopy.memberships by owner), and everyone taking part in a share you
-- own or administer (canopy.shares_managed_with). Accounts are created by
-- `canopy users add` (an administrator) or by canopy.sign_in (SECURITY
-- DEFINER), never by the gateway's own INSERT.
DROP POLICY IF EXISTS users_select ON canopy.users;
CREATE POLICY users_select ON canopy.users FOR SELECT TO canopy_gateway
    USING (id <> 0 AND (id = (SELECT canopy.current_user_id())
        OR /*@citus canopy.may_see_zone(users.id, NULL)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                    WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.owner_id = users.id OFFSET 0) /*@end*/
        OR /*@citus canopy.manages_share_with(id)*/ canopy.shares_managed_with(id) /*@end*/));

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.users FROM canopy_gateway;
GRANT SELECT (id, record_name, name, display_name, email, phone) ON canopy.users TO canopy_gateway;
