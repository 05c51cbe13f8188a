-- Issue 34: three row-level security helpers that no policy or function has
-- called since memberships (0014) replaced them, and that were still
-- granted to canopy_gateway: member_zone_ids, member_record_share_ids and
-- member_any_zone_ids. sql/functions/policy_helpers.sql no longer defines
-- them.
--
-- IF EXISTS: a new database applies this before the repeatable SQL, so it
-- never had them. CASCADE: only a database upgraded from the archived files
-- in the same run still has policies calling them (archive/0004's zones,
-- records and tombstones policies); those are dropped here and created anew
-- by sql/policies/ later in the same transaction. A database already at
-- 0020 has nothing that depends on them, so nothing else is dropped.
SET LOCAL ROLE canopy_owner;

DROP FUNCTION IF EXISTS canopy.member_zone_ids(boolean) CASCADE;
DROP FUNCTION IF EXISTS canopy.member_record_share_ids(boolean) CASCADE;
DROP FUNCTION IF EXISTS canopy.member_any_zone_ids() CASCADE;
