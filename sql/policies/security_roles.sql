-- Row-level security on canopy.security_roles and canopy.role_members
-- (migrations/0025): their policies (canopy_owner_all) and their grants to
-- canopy_gateway, which has none. The gateway learns the caller's roles
-- only through the grant functions (sql/functions/public_grants.sql);
-- `canopy roles` and `canopy schema apply` write them as the administrator.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.security_roles;
CREATE POLICY canopy_owner_all ON canopy.security_roles TO canopy_owner USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS canopy_owner_all ON canopy.role_members;
CREATE POLICY canopy_owner_all ON canopy.role_members TO canopy_owner USING (true) WITH CHECK (true);

REVOKE ALL ON TABLE canopy.security_roles FROM canopy_gateway;
REVOKE ALL ON TABLE canopy.role_members FROM canopy_gateway;
