-- Row-level security on canopy.share_tokens (migrations/0041): its policy
-- canopy_owner_all, and no grant to canopy_gateway, which finds a share by
-- its token only through the owner's functions (share_view, accept_share,
-- request_share_access).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.share_tokens;
CREATE POLICY canopy_owner_all ON canopy.share_tokens TO canopy_owner USING (true) WITH CHECK (true);

REVOKE ALL ON TABLE canopy.share_tokens FROM canopy_gateway;
