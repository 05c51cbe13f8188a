-- Row-level security on canopy.share_tokens (migrations/0041): its policies
-- canopy_owner_all and share_tokens_own. The gateway finds a share by its
-- token only through the owner's functions (share_view, accept_share,
-- request_share_access); on Citus it writes and removes the rows of the
-- caller's own shares (canopy.keep_share_token, canopy.forget_share_token,
-- which run as the caller: DECISIONS 174).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.share_tokens;
CREATE POLICY canopy_owner_all ON canopy.share_tokens TO canopy_owner USING (true) WITH CHECK (true);

-- share_tokens_own: the rows of the caller's own shares, which hold what
-- the caller reads in canopy.shares anyway.
DROP POLICY IF EXISTS share_tokens_own ON canopy.share_tokens;
CREATE POLICY share_tokens_own ON canopy.share_tokens TO canopy_gateway
    USING (owner_id = (SELECT canopy.current_user_id()))
    WITH CHECK (owner_id = (SELECT canopy.current_user_id()));

REVOKE ALL ON TABLE canopy.share_tokens FROM canopy_gateway;
GRANT SELECT, INSERT, DELETE ON canopy.share_tokens TO canopy_gateway;
