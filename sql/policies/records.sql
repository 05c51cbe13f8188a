-- Row-level security on canopy.records: its policies (canopy_owner_all,
-- records_select, records_insert, records_update, records_delete) and its
-- grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.records;
CREATE POLICY canopy_owner_all ON canopy.records TO canopy_owner USING (true) WITH CHECK (true);

-- records: the owner of the zone; accepted participants of a zone-wide share
-- of the zone or of the record-rooted share the record is in (share_id);
-- writing needs READ_WRITE; only the owner deletes a share's root. In the
-- public zone (migrations/0025), the grants of the record's type.
--
-- Each check is one probe of canopy.memberships (migrations/0014) by
-- (caller, zone), whatever the number of shares the caller accepted: the
-- earlier policies (archive/0004, then the arrays of policy_helpers.sql)
-- gathered every zone and share of the caller's in each statement, which
-- cost a participant of 1,000 shares 13 times the owner's time for one
-- record (docs/BENCHMARK_NOTES.md, issue 18).
--
-- OFFSET 0 keeps each probe a probe: without it PostgreSQL may plan the
-- EXISTS as a hashed subplan that first reads all the caller's memberships
-- (it did, for one row, once the table had statistics), which is the cost
-- growing with shares that the table is here to remove. A scan of many
-- rows pays one index probe a row instead; the gateway's statements all
-- read records by zone and name or by a zone's index.
--
-- The public zone comes first in each policy: a record outside it fails
-- `zone_id = public zone` and goes on to the probe, and the grant
-- functions (sql/functions/public_grants.sql), InitPlans evaluated on first
-- use, are then never run; a public record is decided by its type's
-- grants, resolved once per statement, and never probes memberships (the
-- public zone has none). A type without grants gets CloudKit's defaults:
-- READ to _world, CREATE to _icloud, WRITE to _creator. Writing needs a
-- signed-in caller whatever the grants say.
DROP POLICY IF EXISTS records_select ON canopy.records;
CREATE POLICY records_select ON canopy.records FOR SELECT TO canopy_gateway
    USING ((records.zone_id = (SELECT canopy.public_zone_id())
            AND CASE WHEN records.record_type = ANY ((SELECT canopy.granted_record_types())::text[])
                     THEN records.record_type = ANY ((SELECT canopy.public_record_types('READ', false))::text[])
                          OR (records.created_by = (SELECT canopy.current_user_id())
                              AND records.record_type = ANY ((SELECT canopy.public_record_types('READ', true))::text[]))
                     ELSE true END)
        OR /*@citus canopy.may_reach_record(records.owner_id, records.zone_id, records.share_id, false)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                    WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = records.zone_id
                      AND (m.root_record_id IS NULL OR m.share_id = records.share_id) OFFSET 0) /*@end*/);

DROP POLICY IF EXISTS records_insert ON canopy.records;
CREATE POLICY records_insert ON canopy.records FOR INSERT TO canopy_gateway
    WITH CHECK ((records.zone_id = (SELECT canopy.public_zone_id())
                 AND /*@citus canopy.current_user_id() IS DISTINCT FROM NULL*/ (SELECT canopy.current_user_id()) IS NOT NULL /*@end*/
                 AND CASE WHEN records.record_type = ANY ((SELECT canopy.granted_record_types())::text[])
                          THEN records.record_type = ANY ((SELECT canopy.public_record_types('CREATE', false))::text[])
                               OR records.record_type = ANY ((SELECT canopy.public_record_types('CREATE', true))::text[])
                          ELSE true END)
        OR /*@citus canopy.may_reach_record(records.owner_id, records.zone_id, records.share_id, true)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                         WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = records.zone_id
                           AND m.can_write AND (m.root_record_id IS NULL OR m.share_id = records.share_id) OFFSET 0) /*@end*/);

DROP POLICY IF EXISTS records_update ON canopy.records;
CREATE POLICY records_update ON canopy.records FOR UPDATE TO canopy_gateway
    USING ((records.zone_id = (SELECT canopy.public_zone_id())
            AND /*@citus canopy.current_user_id() IS DISTINCT FROM NULL*/ (SELECT canopy.current_user_id()) IS NOT NULL /*@end*/
            AND CASE WHEN records.record_type = ANY ((SELECT canopy.granted_record_types())::text[])
                     THEN records.record_type = ANY ((SELECT canopy.public_record_types('WRITE', false))::text[])
                          OR (records.created_by = (SELECT canopy.current_user_id())
                              AND records.record_type = ANY ((SELECT canopy.public_record_types('WRITE', true))::text[]))
                     ELSE records.created_by = (SELECT canopy.current_user_id()) END)
        OR /*@citus canopy.may_reach_record(records.owner_id, records.zone_id, records.share_id, true)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                    WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = records.zone_id
                      AND m.can_write AND (m.root_record_id IS NULL OR m.share_id = records.share_id) OFFSET 0) /*@end*/)
    WITH CHECK ((records.zone_id = (SELECT canopy.public_zone_id())
                 AND /*@citus canopy.current_user_id() IS DISTINCT FROM NULL*/ (SELECT canopy.current_user_id()) IS NOT NULL /*@end*/
                 AND CASE WHEN records.record_type = ANY ((SELECT canopy.granted_record_types())::text[])
                          THEN records.record_type = ANY ((SELECT canopy.public_record_types('WRITE', false))::text[])
                               OR (records.created_by = (SELECT canopy.current_user_id())
                                   AND records.record_type = ANY ((SELECT canopy.public_record_types('WRITE', true))::text[]))
                          ELSE records.created_by = (SELECT canopy.current_user_id()) END)
        OR /*@citus canopy.may_reach_record(records.owner_id, records.zone_id, records.share_id, true)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                         WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = records.zone_id
                           AND m.can_write AND (m.root_record_id IS NULL OR m.share_id = records.share_id) OFFSET 0) /*@end*/);

-- A share's root: the zone owner's row (share_id NULL) reaches it, a
-- participant's row of that share does not. Deleting a public record is
-- WRITE.
DROP POLICY IF EXISTS records_delete ON canopy.records;
CREATE POLICY records_delete ON canopy.records FOR DELETE TO canopy_gateway
    USING ((records.zone_id = (SELECT canopy.public_zone_id())
            AND /*@citus canopy.current_user_id() IS DISTINCT FROM NULL*/ (SELECT canopy.current_user_id()) IS NOT NULL /*@end*/
            AND CASE WHEN records.record_type = ANY ((SELECT canopy.granted_record_types())::text[])
                     THEN records.record_type = ANY ((SELECT canopy.public_record_types('WRITE', false))::text[])
                          OR (records.created_by = (SELECT canopy.current_user_id())
                              AND records.record_type = ANY ((SELECT canopy.public_record_types('WRITE', true))::text[]))
                     ELSE records.created_by = (SELECT canopy.current_user_id()) END)
        OR /*@citus canopy.may_delete_record(records.owner_id, records.zone_id, records.share_id, records.id)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                    WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = records.zone_id
                      AND m.can_write
                      AND (m.share_id IS NULL OR m.root_record_id IS NULL
                           OR (m.share_id = records.share_id AND records.id <> m.root_record_id)) OFFSET 0) /*@end*/);

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.records FROM canopy_gateway;
GRANT SELECT, DELETE ON canopy.records TO canopy_gateway;
-- The columns of a new row the gateway may choose (on Citus a table grant
-- and sql/triggers/gateway_columns.sql; DECISIONS 166).
SELECT canopy.grant_gateway_insert('canopy.records', ARRAY['zone_id', 'owner_id', 'record_name', 'record_type', 'fields', 'parent_name']);
-- Not record_type (issue 36): a record never changes type (modify_records
-- refuses it), and in the public database a type change would take a record
-- past the new type's CREATE grant.
-- zone_id: moveRecords (sql/functions/move_records.sql); the policy checks
-- write access on both sides and records_before_write allows it only there.
-- owner_id: the zone's owner, moved with zone_id; the reference (zone_id,
-- owner_id) to zones keeps it the zone's (migrations/0039).
GRANT UPDATE (fields, parent_name, zone_id, owner_id) ON canopy.records TO canopy_gateway;
