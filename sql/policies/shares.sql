-- Row-level security on canopy.shares: its policies (canopy_owner_all,
-- shares_select, shares_insert, shares_update, shares_delete) and its grants
-- to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.shares;
CREATE POLICY canopy_owner_all ON canopy.shares TO canopy_owner USING (true) WITH CHECK (true);

-- shares: the zone owner does everything; accepted participants read.
DROP POLICY IF EXISTS shares_select ON canopy.shares;
CREATE POLICY shares_select ON canopy.shares FOR SELECT TO canopy_gateway
    USING (/*@citus owner_id = canopy.current_user_id()*/ zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]) /*@end*/ OR /*@citus canopy.caller_in_share(owner_id, id, 'member')*/ id = ANY ((SELECT canopy.member_share_ids(false))::bigint[]) /*@end*/);

DROP POLICY IF EXISTS shares_insert ON canopy.shares;
CREATE POLICY shares_insert ON canopy.shares FOR INSERT TO canopy_gateway
    WITH CHECK (/*@citus owner_id = canopy.current_user_id()*/ zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]) /*@end*/);

DROP POLICY IF EXISTS shares_update ON canopy.shares;
CREATE POLICY shares_update ON canopy.shares FOR UPDATE TO canopy_gateway
    USING (/*@citus owner_id = canopy.current_user_id()*/ zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]) /*@end*/)
    WITH CHECK (/*@citus owner_id = canopy.current_user_id()*/ zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]) /*@end*/);

DROP POLICY IF EXISTS shares_delete ON canopy.shares;
CREATE POLICY shares_delete ON canopy.shares FOR DELETE TO canopy_gateway
    USING (/*@citus owner_id = canopy.current_user_id()*/ zone_id = ANY ((SELECT canopy.owned_zone_ids())::bigint[]) /*@end*/);

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.shares FROM canopy_gateway;
GRANT SELECT, DELETE ON canopy.shares TO canopy_gateway;
-- The columns of a new row the gateway may choose (on Citus a table grant
-- and sql/triggers/gateway_columns.sql; DECISIONS 166).
SELECT canopy.grant_gateway_insert('canopy.shares', ARRAY['zone_id', 'owner_id', 'root_record_id', 'title', 'public_permission', 'allows_access_requests', 'share_type', 'thumbnail']);
GRANT UPDATE (title, public_permission, modified_at, allows_access_requests, share_type, thumbnail) ON canopy.shares TO canopy_gateway;
