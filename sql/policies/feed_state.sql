-- Row-level security on canopy.feed_state: its policies (canopy_owner_all,
-- feed_state_select) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0007.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.feed_state;
CREATE POLICY canopy_owner_all ON canopy.feed_state TO canopy_owner USING (true) WITH CHECK (true);

DROP POLICY IF EXISTS feed_state_select ON canopy.feed_state;
CREATE POLICY feed_state_select ON canopy.feed_state FOR SELECT TO canopy_gateway USING (true);

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.feed_state FROM canopy_gateway;
GRANT SELECT ON canopy.feed_state TO canopy_gateway;
