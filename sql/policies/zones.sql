-- Row-level security on canopy.zones: its policies (canopy_owner_all,
-- zones_select, zones_insert, zones_delete) and its grants to
-- canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.zones;
CREATE POLICY canopy_owner_all ON canopy.zones TO canopy_owner USING (true) WITH CHECK (true);

-- zones: owners do everything but delete their _defaultZone; accepted
-- participants of any share in the zone see it (one probe of
-- canopy.memberships, migrations/0014); everyone sees the public zone
-- (owner 0, migrations/0025 and 0038).
DROP POLICY IF EXISTS zones_select ON canopy.zones;
CREATE POLICY zones_select ON canopy.zones FOR SELECT TO canopy_gateway
    USING (owner_id = (SELECT canopy.current_user_id())
        OR owner_id = 0
        OR /*@citus canopy.may_see_zone(zones.owner_id, zones.id)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                    WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = zones.id OFFSET 0) /*@end*/);

DROP POLICY IF EXISTS zones_insert ON canopy.zones;
CREATE POLICY zones_insert ON canopy.zones FOR INSERT TO canopy_gateway
    WITH CHECK (owner_id = (SELECT canopy.current_user_id()));

DROP POLICY IF EXISTS zones_delete ON canopy.zones;
CREATE POLICY zones_delete ON canopy.zones FOR DELETE TO canopy_gateway
    USING (owner_id = (SELECT canopy.current_user_id()) AND name <> '_defaultZone');

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.zones FROM canopy_gateway;
GRANT SELECT, DELETE ON canopy.zones TO canopy_gateway;
-- The columns of a new row the gateway may choose (on Citus a table grant
-- and sql/triggers/gateway_columns.sql; DECISIONS 166).
SELECT canopy.grant_gateway_insert('canopy.zones', ARRAY['owner_id', 'name']);
