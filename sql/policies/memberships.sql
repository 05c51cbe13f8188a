-- Row-level security on canopy.memberships (migrations/0014): its policies
-- (canopy_owner_all, memberships_select) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (the triggers that keep the table, the policy
-- helpers) see every row: FORCE ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.memberships;
CREATE POLICY canopy_owner_all ON canopy.memberships TO canopy_owner USING (true) WITH CHECK (true);

-- memberships: your own rows only. The policies of records, tombstones and
-- zones read this table in a subquery that runs as the gateway, so the
-- gateway may read its caller's rows; nobody writes them but the triggers.
DROP POLICY IF EXISTS memberships_select ON canopy.memberships;
CREATE POLICY memberships_select ON canopy.memberships FOR SELECT TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.memberships FROM canopy_gateway;
GRANT SELECT ON canopy.memberships TO canopy_gateway;
