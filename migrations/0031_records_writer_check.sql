-- 0031: records' writers checked once per statement (issue 51, item 2).
-- The foreign keys records_created_by_fkey and records_modified_by_fkey
-- (baseline, `REFERENCES canopy.users (id) ON DELETE SET NULL`) checked the
-- same user once per row: a batch of 400 saves by one user probed that
-- user's row 800 times (3.6 ms of a warm 32 ms INSERT,
-- docs/BENCHMARK_NOTES.md "Issue 51, item 2"). Both halves of what they did
-- move to sql/triggers/: a written row's writers must be users
-- (records_check_writers_inserted / _updated, once per statement over the
-- transition table, taking the same FOR KEY SHARE lock the foreign key
-- took, so a user cannot be deleted under a write), and deleting a user
-- sets created_by and modified_by to NULL in the records they wrote
-- (users_forget_writer, as ON DELETE SET NULL did; docs/DECISIONS.md 124).
--
-- IF EXISTS: a database made from this version on never had them.
SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.records DROP CONSTRAINT IF EXISTS records_created_by_fkey;
ALTER TABLE canopy.records DROP CONSTRAINT IF EXISTS records_modified_by_fkey;
