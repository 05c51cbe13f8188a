-- Row-level security on canopy.owner_clocks (migrations/0047): its policies
-- (canopy_owner_all, owner_clocks_select) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (the clocks' triggers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.owner_clocks;
CREATE POLICY canopy_owner_all ON canopy.owner_clocks TO canopy_owner USING (true) WITH CHECK (true);

-- owner_clocks: a user reads their own clock and those of the owners whose
-- zones they see through a share (one probe of canopy.memberships by
-- owner, as users_select), which is what a databaseChanges pass reads. An
-- owner's clock says how often the owner's zones changed, so nobody else
-- reads it. Only canopy.tick_owner_clock writes.
DROP POLICY IF EXISTS owner_clocks_select ON canopy.owner_clocks;
CREATE POLICY owner_clocks_select ON canopy.owner_clocks FOR SELECT TO canopy_gateway
    USING (owner_id = (SELECT canopy.current_user_id())
        OR /*@citus canopy.may_see_zone(owner_clocks.owner_id, NULL)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                    WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.owner_id = owner_clocks.owner_id OFFSET 0) /*@end*/);

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.owner_clocks FROM canopy_gateway;
GRANT SELECT ON canopy.owner_clocks TO canopy_gateway;
