-- Row-level security on canopy.container_tokens, canopy.server_keys and
-- canopy.server_key_signatures (migrations/0027): their policies
-- (canopy_owner_all) and their grants to canopy_gateway, which has none.
-- The gateway checks a presented ckAPIToken only through
-- canopy.container_token_for_selector, a key through canopy.server_key and a
-- signature through canopy.note_server_signature (sql/functions/identity.sql);
-- `canopy tokens api` and `canopy keys` write the tables as the administrator.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.container_tokens;
CREATE POLICY canopy_owner_all ON canopy.container_tokens TO canopy_owner USING (true) WITH CHECK (true);

REVOKE ALL ON TABLE canopy.container_tokens FROM canopy_gateway;
DROP POLICY IF EXISTS canopy_owner_all ON canopy.server_keys;
CREATE POLICY canopy_owner_all ON canopy.server_keys TO canopy_owner USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS canopy_owner_all ON canopy.server_key_signatures;
CREATE POLICY canopy_owner_all ON canopy.server_key_signatures TO canopy_owner USING (true) WITH CHECK (true);

REVOKE ALL ON TABLE canopy.server_keys FROM canopy_gateway;
REVOKE ALL ON TABLE canopy.server_key_signatures FROM canopy_gateway;
