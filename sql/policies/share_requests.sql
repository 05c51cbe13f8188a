-- Row-level security on canopy.share_requests and canopy.share_activity
-- (migrations/0028): their policies and their grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- share_requests: the share's owner and accepted administrators read and
-- decide its requests; a requester reads their own row (nothing else of the
-- share). A requester asks only through canopy.request_share_access
-- (sql/functions/share_requests.sql), so the gateway may insert only a
-- BLOCKED row (blocking someone who never asked) and may never set a row
-- back to PENDING.
--
-- share_activity: append-only. The gateway has SELECT and nothing else;
-- the triggers of sql/triggers/share_activity.sql write it as canopy_owner.
-- The zone's owner reads every entry of their shares (also after a share
-- is gone, until the retention period ends); an accepted administrator
-- reads every entry of the share; another accepted participant reads the
-- entries about themselves.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.share_requests;
CREATE POLICY canopy_owner_all ON canopy.share_requests TO canopy_owner USING (true) WITH CHECK (true);

DROP POLICY IF EXISTS share_requests_select ON canopy.share_requests;
CREATE POLICY share_requests_select ON canopy.share_requests FOR SELECT TO canopy_gateway
    USING (/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/
        OR /*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/
        OR user_id = (SELECT canopy.current_user_id()));

DROP POLICY IF EXISTS share_requests_insert ON canopy.share_requests;
CREATE POLICY share_requests_insert ON canopy.share_requests FOR INSERT TO canopy_gateway
    WITH CHECK (status = 'BLOCKED'
        AND (/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/
             OR /*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/));

DROP POLICY IF EXISTS share_requests_update ON canopy.share_requests;
CREATE POLICY share_requests_update ON canopy.share_requests FOR UPDATE TO canopy_gateway
    USING (/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/
        OR /*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/)
    WITH CHECK (status <> 'PENDING'
        AND (/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/
             OR /*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/));

DROP POLICY IF EXISTS share_requests_delete ON canopy.share_requests;
CREATE POLICY share_requests_delete ON canopy.share_requests FOR DELETE TO canopy_gateway
    USING (/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/
        OR /*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/);

REVOKE ALL ON TABLE canopy.share_requests FROM canopy_gateway;
GRANT SELECT, DELETE ON canopy.share_requests TO canopy_gateway;
-- The columns of a new row the gateway may choose (on Citus a table grant
-- and sql/triggers/gateway_columns.sql; DECISIONS 166).
SELECT canopy.grant_gateway_insert('canopy.share_requests', ARRAY['share_id', 'owner_id', 'user_id', 'status', 'decided_at', 'decided_by']);
GRANT UPDATE (status, decided_at, decided_by) ON canopy.share_requests TO canopy_gateway;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.share_activity;
CREATE POLICY canopy_owner_all ON canopy.share_activity TO canopy_owner USING (true) WITH CHECK (true);

DROP POLICY IF EXISTS share_activity_select ON canopy.share_activity;
CREATE POLICY share_activity_select ON canopy.share_activity FOR SELECT TO canopy_gateway
    USING (owner_id = (SELECT canopy.current_user_id())
        OR /*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/
        OR (subject_id = (SELECT canopy.current_user_id())
            AND /*@citus canopy.caller_in_share(owner_id, share_id, 'member')*/ share_id = ANY ((SELECT canopy.member_share_ids(false))::bigint[]) /*@end*/));

REVOKE ALL ON TABLE canopy.share_activity FROM canopy_gateway;
GRANT SELECT ON canopy.share_activity TO canopy_gateway;
