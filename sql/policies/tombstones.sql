-- Row-level security on canopy.tombstones: its policies (canopy_owner_all,
-- tombstones_select) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.tombstones;
CREATE POLICY canopy_owner_all ON canopy.tombstones TO canopy_owner USING (true) WITH CHECK (true);

-- tombstones: whoever could read the record. Written by trigger only.
DROP POLICY IF EXISTS tombstones_select ON canopy.tombstones;
CREATE POLICY tombstones_select ON canopy.tombstones FOR SELECT TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(false))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(false))::bigint[]));

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.tombstones FROM canopy_gateway;
GRANT SELECT ON canopy.tombstones TO canopy_gateway;
