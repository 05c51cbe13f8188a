-- 0030: canopy.modify_records answers the rows it wrote (issue 51, item 2).
-- Its jsonb-returning definition (sql/functions/modify_records.sql before
-- this, itself superseding archive/0005, 0006 and 0010) is dropped here:
-- a function's return type cannot be changed in place. The live definition,
-- RETURNS TABLE (outcome jsonb, rec canopy.records), is created again by the
-- same `canopy migrate up` from sql/functions/modify_records.sql, which runs
-- after the versioned files, so the gateway reads what was saved from the
-- write itself instead of a second statement under the zone's lock.
--
-- IF EXISTS: a new database applies this before the repeatable SQL, so it
-- never had the old one. A gateway older than this migration calls the
-- function as a scalar and fails: gateway and `migrate up` ship together.
SET LOCAL ROLE canopy_owner;

DROP FUNCTION IF EXISTS canopy.modify_records(bigint, jsonb, text[], text, jsonb);
