-- Row-level security on canopy.participants: its policies (canopy_owner_all,
-- participants_select, participants_insert, participants_update,
-- participants_delete) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.participants;
CREATE POLICY canopy_owner_all ON canopy.participants TO canopy_owner USING (true) WITH CHECK (true);

-- participants: the owner manages everyone but the OWNER row; accepted
-- administrators manage PRIVATE_USERs other than themselves, giving at most
-- their own permission (issue 64: a READ_ONLY administrator once made
-- their own row PRIVATE_USER with READ_WRITE), and see the whole list; other accepted
-- participants see the owner and themselves, and may leave (their own row to
-- REMOVED, guarded by participants_guard_self_update; a PUBLIC_USER's row
-- is deleted so the link can be used again).
DROP POLICY IF EXISTS participants_select ON canopy.participants;
CREATE POLICY participants_select ON canopy.participants FOR SELECT TO canopy_gateway
    USING (/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/
        OR /*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/
        OR (/*@citus canopy.caller_in_share(owner_id, share_id, 'member')*/ share_id = ANY ((SELECT canopy.member_share_ids(false))::bigint[]) /*@end*/
            AND (role = 'OWNER' OR user_id = (SELECT canopy.current_user_id()))));

DROP POLICY IF EXISTS participants_insert ON canopy.participants;
CREATE POLICY participants_insert ON canopy.participants FOR INSERT TO canopy_gateway
    WITH CHECK ((/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/ AND role <> 'OWNER')
        OR (/*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/ AND role = 'PRIVATE_USER'
            AND user_id IS DISTINCT FROM (SELECT canopy.current_user_id())
            AND (permission = 'READ_ONLY' OR /*@citus canopy.caller_in_share(owner_id, share_id, 'writing_admin')*/ share_id = ANY ((SELECT canopy.writing_admin_share_ids())::bigint[]) /*@end*/)));

DROP POLICY IF EXISTS participants_update ON canopy.participants;
CREATE POLICY participants_update ON canopy.participants FOR UPDATE TO canopy_gateway
    USING ((/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/ AND role <> 'OWNER')
        OR (/*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/ AND role = 'PRIVATE_USER')
        OR (/*@citus canopy.caller_in_share(owner_id, share_id, 'member')*/ share_id = ANY ((SELECT canopy.member_share_ids(false))::bigint[]) /*@end*/ AND user_id = (SELECT canopy.current_user_id())))
    WITH CHECK ((/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/ AND role <> 'OWNER')
        OR (/*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/ AND role = 'PRIVATE_USER'
            AND user_id IS DISTINCT FROM (SELECT canopy.current_user_id())
            AND (permission = 'READ_ONLY' OR /*@citus canopy.caller_in_share(owner_id, share_id, 'writing_admin')*/ share_id = ANY ((SELECT canopy.writing_admin_share_ids())::bigint[]) /*@end*/))
        OR (user_id = (SELECT canopy.current_user_id()) AND status = 'REMOVED'));

DROP POLICY IF EXISTS participants_delete ON canopy.participants;
CREATE POLICY participants_delete ON canopy.participants FOR DELETE TO canopy_gateway
    USING ((/*@citus owner_id = canopy.current_user_id()*/ share_id = ANY ((SELECT canopy.owned_share_ids())::bigint[]) /*@end*/ AND role <> 'OWNER')
        OR (/*@citus canopy.caller_in_share(owner_id, share_id, 'admin')*/ share_id = ANY ((SELECT canopy.admin_share_ids())::bigint[]) /*@end*/ AND role = 'PRIVATE_USER')
        OR (/*@citus canopy.caller_in_share(owner_id, share_id, 'member')*/ share_id = ANY ((SELECT canopy.member_share_ids(false))::bigint[]) /*@end*/
            AND user_id = (SELECT canopy.current_user_id()) AND role = 'PUBLIC_USER'));

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.participants FROM canopy_gateway;
GRANT SELECT, DELETE ON canopy.participants TO canopy_gateway;
-- is_approved_requester, accepted_at: approving an access request
-- (canopy.decide_share_request), which only a share's managers may.
-- The columns of a new row the gateway may choose (on Citus a table grant
-- and sql/triggers/gateway_columns.sql; DECISIONS 166).
SELECT canopy.grant_gateway_insert('canopy.participants', ARRAY['share_id', 'owner_id', 'user_id', 'email', 'phone', 'role', 'permission', 'status', 'accepted_at', 'is_approved_requester']);
GRANT UPDATE (user_id, role, permission, status, accepted_at, is_approved_requester) ON canopy.participants TO canopy_gateway;
