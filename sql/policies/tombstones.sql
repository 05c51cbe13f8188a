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

-- tombstones: whoever could read the record (records_select's probe of
-- canopy.memberships; in the public zone, the READ grants of its type, with
-- the record's creator kept in the tombstone for _creator). Written by
-- trigger only.
DROP POLICY IF EXISTS tombstones_select ON canopy.tombstones;
CREATE POLICY tombstones_select ON canopy.tombstones FOR SELECT TO canopy_gateway
    USING ((tombstones.zone_id = (SELECT canopy.public_zone_id())
            AND CASE WHEN tombstones.record_type = ANY ((SELECT canopy.granted_record_types())::text[])
                     THEN tombstones.record_type = ANY ((SELECT canopy.public_record_types('READ', false))::text[])
                          OR (tombstones.created_by = (SELECT canopy.current_user_id())
                              AND tombstones.record_type = ANY ((SELECT canopy.public_record_types('READ', true))::text[]))
                     ELSE true END)
        OR /*@citus canopy.may_reach_record(tombstones.owner_id, tombstones.zone_id, tombstones.share_id, false)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                    WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = tombstones.zone_id
                      AND (m.root_record_id IS NULL OR m.share_id = tombstones.share_id) OFFSET 0) /*@end*/);

REVOKE ALL ON TABLE canopy.tombstones FROM canopy_gateway;
GRANT SELECT ON canopy.tombstones TO canopy_gateway;
