-- Row-level security on canopy.field_types: its policies (canopy_owner_all,
-- field_types_select) and its grants to canopy_gateway.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0005.

SET LOCAL ROLE canopy_owner;

-- The owner's own functions (triggers, the helpers) see every row: FORCE
-- ROW LEVEL SECURITY applies to the owner too.
DROP POLICY IF EXISTS canopy_owner_all ON canopy.field_types;
CREATE POLICY canopy_owner_all ON canopy.field_types TO canopy_owner USING (true) WITH CHECK (true);

DROP POLICY IF EXISTS field_types_select ON canopy.field_types;
CREATE POLICY field_types_select ON canopy.field_types FOR SELECT TO canopy_gateway USING (true);

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.field_types FROM canopy_gateway;
GRANT SELECT ON canopy.field_types TO canopy_gateway;
