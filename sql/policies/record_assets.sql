-- Grants on the view canopy.record_assets (migrations/0018). A view has no
-- policies of its own: it reads records and zones as the caller
-- (security_invoker), so their policies decide what it shows.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

REVOKE ALL ON TABLE canopy.record_assets FROM canopy_gateway;
GRANT SELECT ON canopy.record_assets TO canopy_gateway;
