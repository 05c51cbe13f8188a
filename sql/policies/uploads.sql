-- Row-level security on canopy.uploads (migrations/0017): its policies
-- (canopy_owner_all, uploads_select, uploads_insert) and its grants to
-- canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.uploads;
CREATE POLICY canopy_owner_all ON canopy.uploads TO canopy_owner USING (true) WITH CHECK (true);

-- uploads: your own, and only as yourself. The gateway records an upload
-- after the bytes are stored (POST /assets); attaching one is done by the
-- save, as the record's writer.
DROP POLICY IF EXISTS uploads_select ON canopy.uploads;
CREATE POLICY uploads_select ON canopy.uploads FOR SELECT TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));

DROP POLICY IF EXISTS uploads_insert ON canopy.uploads;
CREATE POLICY uploads_insert ON canopy.uploads FOR INSERT TO canopy_gateway
    WITH CHECK (user_id = (SELECT canopy.current_user_id()) AND used_at IS NULL
                AND expires_at <= now() + interval '24 hours');

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
-- The token's hash is never readable.
REVOKE ALL ON TABLE canopy.uploads FROM canopy_gateway;
GRANT SELECT (id, user_id, sha256, size, content_type, created_at, expires_at, used_at) ON canopy.uploads TO canopy_gateway;
-- The columns of a new row the gateway may choose (on Citus a table grant
-- and sql/triggers/gateway_columns.sql; DECISIONS 166).
SELECT canopy.grant_gateway_insert('canopy.uploads', ARRAY['token_hash', 'sha256', 'size', 'content_type']);
