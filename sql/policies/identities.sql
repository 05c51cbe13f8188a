-- Row-level security on canopy.identities (migrations/0013): its policies
-- (canopy_owner_all, identities_select) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (canopy.sign_in) see every row: FORCE ROW LEVEL
-- SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.identities;
CREATE POLICY canopy_owner_all ON canopy.identities TO canopy_owner USING (true) WITH CHECK (true);

-- identities: your own sign-ins only. Rows are written by canopy.sign_in,
-- never by the gateway directly.
DROP POLICY IF EXISTS identities_select ON canopy.identities;
CREATE POLICY identities_select ON canopy.identities FOR SELECT TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.identities FROM canopy_gateway;
GRANT SELECT (id, user_id, issuer, subject, provider, created_at, last_seen_at) ON canopy.identities TO canopy_gateway;
