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
-- writing needs READ_WRITE; only the owner deletes a share's root.
DROP POLICY IF EXISTS records_select ON canopy.records;
CREATE POLICY records_select ON canopy.records FOR SELECT TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(false))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(false))::bigint[]));

DROP POLICY IF EXISTS records_insert ON canopy.records;
CREATE POLICY records_insert ON canopy.records FOR INSERT TO canopy_gateway
    WITH CHECK (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(true))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(true))::bigint[]));

DROP POLICY IF EXISTS records_update ON canopy.records;
CREATE POLICY records_update ON canopy.records FOR UPDATE TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(true))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(true))::bigint[]))
    WITH CHECK (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR zone_id = ANY ((SELECT canopy.member_zone_ids(true))::bigint[])
        OR share_id = ANY ((SELECT canopy.member_record_share_ids(true))::bigint[]));

DROP POLICY IF EXISTS records_delete ON canopy.records;
CREATE POLICY records_delete ON canopy.records FOR DELETE TO canopy_gateway
    USING (zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[])
        OR ((zone_id = ANY ((SELECT canopy.member_zone_ids(true))::bigint[])
             OR share_id = ANY ((SELECT canopy.member_record_share_ids(true))::bigint[]))
            AND id <> ALL ((SELECT canopy.member_root_record_ids())::bigint[])));

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.records FROM canopy_gateway;
GRANT SELECT, DELETE ON canopy.records TO canopy_gateway;
GRANT INSERT (zone_id, record_name, record_type, fields, parent_name) ON canopy.records TO canopy_gateway;
GRANT UPDATE (record_type, fields, parent_name) ON canopy.records TO canopy_gateway;
