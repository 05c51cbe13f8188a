-- Row-level security on canopy.server_secrets: its policies
-- (canopy_owner_all) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0005.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.server_secrets;
CREATE POLICY canopy_owner_all ON canopy.server_secrets TO canopy_owner USING (true) WITH CHECK (true);

-- canopy_gateway has no privilege on this table.
REVOKE ALL ON TABLE canopy.server_secrets FROM canopy_gateway;
