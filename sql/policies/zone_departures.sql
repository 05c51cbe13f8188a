-- Row-level security on canopy.zone_departures: its policies
-- (canopy_owner_all, zone_departures_select) and its grants to
-- canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0007.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.zone_departures;
CREATE POLICY canopy_owner_all ON canopy.zone_departures TO canopy_owner USING (true) WITH CHECK (true);

DROP POLICY IF EXISTS zone_departures_select ON canopy.zone_departures;
CREATE POLICY zone_departures_select ON canopy.zone_departures FOR SELECT TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.zone_departures FROM canopy_gateway;
GRANT SELECT ON canopy.zone_departures TO canopy_gateway;
