-- Row-level security on canopy.container_tokens (migrations/0027): its
-- policy (canopy_owner_all) and its grants to canopy_gateway, which has
-- none. The gateway checks a presented ckAPIToken only through
-- canopy.container_token_for_selector (sql/functions/identity.sql); `canopy
-- tokens api` writes the table as the administrator.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.container_tokens;
CREATE POLICY canopy_owner_all ON canopy.container_tokens TO canopy_owner USING (true) WITH CHECK (true);

REVOKE ALL ON TABLE canopy.container_tokens FROM canopy_gateway;
