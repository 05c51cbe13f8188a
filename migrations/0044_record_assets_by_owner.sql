-- 0044: canopy.record_assets joins a record to its zone by the zone's
-- owner too (issue 67; DECISIONS 161). Supersedes the view of
-- migrations/0018_record_assets.sql (same columns, same rows: a record's
-- owner_id is its zone's, migrations/0039).
--
-- On Citus records and zones are distributed by owner_id, and Citus joins
-- two distributed tables only on their distribution columns ("complex
-- joins are only supported when all distributed tables are co-located and
-- joined on their distribution columns"): the permission matrix on
-- distributed tables found the view unreadable.
SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE VIEW canopy.record_assets WITH (security_invoker = true) AS
SELECT z.name AS zone_name, r.zone_id, r.record_name, f.key AS field_name,
       a->>'sha256' AS sha256, (a->>'size')::bigint AS size, a->>'contentType' AS content_type
  FROM canopy.records r
  JOIN canopy.zones z ON z.id = r.zone_id AND z.owner_id = r.owner_id
  CROSS JOIN LATERAL jsonb_each(r.fields) f
  CROSS JOIN LATERAL jsonb_path_query(f.value, 'lax $.** ? (@.type == "ASSET")') a
 WHERE r.fields @? 'lax $.*.** ? (@.type == "ASSET")';
