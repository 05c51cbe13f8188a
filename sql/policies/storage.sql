-- Row-level security on canopy.storage_quota_default and
-- canopy.storage_usage (migrations/0032): the owner's functions see every
-- row; canopy_gateway has no privilege on either (usage moves only through
-- the triggers of sql/triggers/storage.sql, a user reads their own through
-- canopy.my_storage, quotas change only as an administrator).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.storage_quota_default;
CREATE POLICY canopy_owner_all ON canopy.storage_quota_default TO canopy_owner USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS canopy_owner_all ON canopy.storage_usage;
CREATE POLICY canopy_owner_all ON canopy.storage_usage TO canopy_owner USING (true) WITH CHECK (true);

REVOKE ALL ON TABLE canopy.storage_quota_default FROM canopy_gateway;
REVOKE ALL ON TABLE canopy.storage_usage FROM canopy_gateway;
