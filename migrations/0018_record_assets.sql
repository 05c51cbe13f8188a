-- The assets records hold, as a view for psql (API.md §9 and §11, issue 16):
-- `canopy psql --as NAME` shows a user exactly the assets of the records
-- they may read, because the view reads records (and zones) with the
-- caller's own row-level security (security_invoker). Its grant to
-- canopy_gateway is in sql/policies/record_assets.sql.
SET LOCAL ROLE canopy_owner;

CREATE VIEW canopy.record_assets WITH (security_invoker = true) AS
SELECT z.name AS zone_name, r.zone_id, r.record_name, f.key AS field_name,
       a->>'sha256' AS sha256, (a->>'size')::bigint AS size, a->>'contentType' AS content_type
  FROM canopy.records r
  JOIN canopy.zones z ON z.id = r.zone_id
  CROSS JOIN LATERAL jsonb_each(r.fields) f
  CROSS JOIN LATERAL jsonb_path_query(f.value, 'lax $.** ? (@.type == "ASSET")') a
 WHERE r.fields @? 'lax $.*.** ? (@.type == "ASSET")';
COMMENT ON VIEW canopy.record_assets IS 'Each asset a record holds (one row per file; a LIST<ASSET> field gives several), under the reader''s row-level security.';
COMMENT ON COLUMN canopy.record_assets.zone_name IS 'The record''s zone.';
COMMENT ON COLUMN canopy.record_assets.zone_id IS 'The record''s zone id.';
COMMENT ON COLUMN canopy.record_assets.record_name IS 'The record''s recordName.';
COMMENT ON COLUMN canopy.record_assets.field_name IS 'The ASSET or LIST<ASSET> field.';
COMMENT ON COLUMN canopy.record_assets.sha256 IS 'SHA-256 of the bytes: their name in the asset store (blobs/<first two hex digits>/<sha256>).';
COMMENT ON COLUMN canopy.record_assets.size IS 'Length of the bytes.';
COMMENT ON COLUMN canopy.record_assets.content_type IS 'The Content-Type downloads are sent with.';
