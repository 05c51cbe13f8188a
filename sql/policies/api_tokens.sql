-- Row-level security on canopy.api_tokens: its policies (canopy_owner_all,
-- api_tokens_select, api_tokens_delete) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0004.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.api_tokens;
CREATE POLICY canopy_owner_all ON canopy.api_tokens TO canopy_owner USING (true) WITH CHECK (true);

-- api_tokens: your own tokens' metadata (the hash column is not granted).
DROP POLICY IF EXISTS api_tokens_select ON canopy.api_tokens;
CREATE POLICY api_tokens_select ON canopy.api_tokens FOR SELECT TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));

DROP POLICY IF EXISTS api_tokens_delete ON canopy.api_tokens;
CREATE POLICY api_tokens_delete ON canopy.api_tokens FOR DELETE TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.api_tokens FROM canopy_gateway;
GRANT SELECT (id, user_id, selector, created_at, last_used_at, revoked_at), DELETE ON canopy.api_tokens TO canopy_gateway;
