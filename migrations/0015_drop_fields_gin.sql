-- Writes pay for the indexes reads use, and no more (issue 18, goal 4).
--
-- records_fields_idx, a GIN index over all of `fields` (jsonb_path_ops,
-- archive/0005), served `fields @> '{"k": v}'`. Nothing asks for that any
-- more: the query compiler writes a field's test with the typed extractors
-- (canopy.number_field(fields, 'k') = …), which `canopy schema apply`
-- indexes per declared field, or `fields -> 'k' @> …` for lists, which this
-- index cannot serve; and under row-level security no JSONB operator can be
-- an index condition at all (it is not LEAKPROOF). It had no scan in a whole
-- `make bench` (pg_stat_user_indexes) while it cost every saved record a GIN
-- insertion of each of its keys and values: about 13 ms of a 400-record
-- batch's 73 ms (docs/BENCHMARK_NOTES.md).
SET LOCAL ROLE canopy_owner;

DROP INDEX IF EXISTS canopy.records_fields_idx;
