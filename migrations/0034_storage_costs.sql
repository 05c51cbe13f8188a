-- 0034: what storage_usage.field_bytes counts (issue 64). A record now
-- costs its names and the row besides its fields' JSON text, and a share's
-- thumbnail is charged to its zone's owner (canopy.record_bytes in
-- sql/functions/storage.sql; canopy.shares_charge_storage in
-- sql/triggers/storage.sql, which counts every user's usage again when it
-- is applied). No data changes here.
COMMENT ON COLUMN canopy.storage_usage.field_bytes IS 'What the user''s records cost besides their assets (canopy.record_bytes: fields'' JSON text, names, 200 bytes of row and index each), and their shares'' thumbnails.';
