-- Row-level security on canopy.daily_quotas and canopy.daily_quota_use:
-- the owner's functions see every row; canopy_gateway has no privilege on
-- either (counts move only through canopy.use_daily_quota).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.daily_quotas;
CREATE POLICY canopy_owner_all ON canopy.daily_quotas TO canopy_owner USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS canopy_owner_all ON canopy.daily_quota_use;
CREATE POLICY canopy_owner_all ON canopy.daily_quota_use TO canopy_owner USING (true) WITH CHECK (true);

REVOKE ALL ON TABLE canopy.daily_quotas FROM canopy_gateway;
REVOKE ALL ON TABLE canopy.daily_quota_use FROM canopy_gateway;
