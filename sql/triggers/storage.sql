-- Storage quotas' triggers (issue 53, part 2): records charge their zone's
-- owner (a public record its creator) once per statement, over the
-- statement's transition tables; deleting a zone refunds its records
-- before they go; an upload is refused when its uploader has no room.
-- Functions in sql/functions/storage.sql, tables in migrations/0032.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

-- One charge per user a statement touched, in user order (two statements
-- charging the same users lock their rows in the same order).
--
-- A record's owner_id is its zone's (the reference (zone_id, owner_id)),
-- so the charge is read from the transition tables alone: on Citus the
-- trigger runs in a shard's task, where a transition table joined to a
-- distributed table cannot be planned ("complex table expressions",
-- docs/plans/ISSUE_67_SCHEMA_MAP.md §8.11). A zone's owner's usage row is
-- co-located with the zone; a public record's creator's is not, and is
-- charged across nodes.
CREATE OR REPLACE FUNCTION canopy.records_charge_storage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        FOR c IN
            SELECT coalesce(nullif(w.owner_id, 0), w.created_by) AS user_id, count(*)::bigint AS records,
                   sum(canopy.record_bytes(w.fields, w.record_name, w.record_type, w.parent_name))::bigint AS field_bytes, sum(canopy.record_asset_bytes(w.fields))::bigint AS asset_bytes
              FROM written w
             WHERE coalesce(nullif(w.owner_id, 0), w.created_by) IS NOT NULL
             GROUP BY 1 ORDER BY 1
        LOOP
            PERFORM canopy.charge_storage(c.user_id, c.records, c.field_bytes, c.asset_bytes);
        END LOOP;
    ELSIF TG_OP = 'DELETE' THEN
        -- The records of a zone being deleted were refunded by
        -- zones_refund_storage before the cascade, which marked the zone.
        FOR c IN
            SELECT coalesce(nullif(o.owner_id, 0), o.created_by) AS user_id, count(*)::bigint AS records,
                   sum(canopy.record_bytes(o.fields, o.record_name, o.record_type, o.parent_name))::bigint AS field_bytes, sum(canopy.record_asset_bytes(o.fields))::bigint AS asset_bytes
              FROM removed o
             WHERE coalesce(nullif(o.owner_id, 0), o.created_by) IS NOT NULL
               AND current_setting('canopy.zone_refunded_' || o.zone_id, true) IS DISTINCT FROM 'y'
             GROUP BY 1 ORDER BY 1
        LOOP
            PERFORM canopy.charge_storage(c.user_id, -c.records, -c.field_bytes, -c.asset_bytes);
        END LOOP;
    ELSE
        FOR c IN
            SELECT d.user_id, sum(d.records)::bigint AS records, sum(d.field_bytes)::bigint AS field_bytes, sum(d.asset_bytes)::bigint AS asset_bytes
              FROM (SELECT coalesce(nullif(w.owner_id, 0), w.created_by) AS user_id, 1::bigint AS records,
                           canopy.record_bytes(w.fields, w.record_name, w.record_type, w.parent_name) AS field_bytes, canopy.record_asset_bytes(w.fields) AS asset_bytes
                      FROM written w
                    UNION ALL
                    SELECT coalesce(nullif(o.owner_id, 0), o.created_by), -1::bigint,
                           -canopy.record_bytes(o.fields, o.record_name, o.record_type, o.parent_name), -canopy.record_asset_bytes(o.fields)
                      FROM removed o) d
             WHERE d.user_id IS NOT NULL
             GROUP BY d.user_id
            HAVING sum(d.records) <> 0 OR sum(d.field_bytes) <> 0 OR sum(d.asset_bytes) <> 0
             ORDER BY d.user_id
        LOOP
            PERFORM canopy.charge_storage(c.user_id, c.records, c.field_bytes, c.asset_bytes);
        END LOOP;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION canopy.records_charge_storage() IS 'Charges each user a statement''s records belong to (zone owner, or a public record''s creator) for the bytes it added or freed; refuses growth past a quota (CN007).';

DROP TRIGGER IF EXISTS records_charge_storage_inserted ON canopy.records;
CREATE TRIGGER records_charge_storage_inserted AFTER INSERT ON canopy.records
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_charge_storage();
DROP TRIGGER IF EXISTS records_charge_storage_updated ON canopy.records;
CREATE TRIGGER records_charge_storage_updated AFTER UPDATE ON canopy.records
    REFERENCING OLD TABLE AS removed NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_charge_storage();
DROP TRIGGER IF EXISTS records_charge_storage_deleted ON canopy.records;
CREATE TRIGGER records_charge_storage_deleted AFTER DELETE ON canopy.records
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.records_charge_storage();

-- A zone's records are refunded before the zone goes (its cascade then
-- finds no zone to charge).
CREATE OR REPLACE FUNCTION canopy.zones_refund_storage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c record;
    thumbnails bigint;
BEGIN
    -- The records the cascade deletes next are refunded here, or not at
    -- all: records_charge_storage passes over them.
    PERFORM set_config('canopy.zone_refunded_' || OLD.id, 'y', true);
    -- The owner being deleted (this zone goes in their cascade): their usage
    -- row goes with them, and locking it here while their other zones wait
    -- could deadlock with a participant writing in one of those.
    IF OLD.owner_id <> 0 AND NOT EXISTS (SELECT 1 FROM canopy.users WHERE id = OLD.owner_id) THEN
        RETURN OLD;
    END IF;
    FOR c IN
        SELECT coalesce(nullif(OLD.owner_id, 0), r.created_by) AS user_id, count(*)::bigint AS records,
               sum(canopy.record_bytes(r.fields, r.record_name, r.record_type, r.parent_name))::bigint AS field_bytes, sum(canopy.record_asset_bytes(r.fields))::bigint AS asset_bytes
          FROM canopy.records r
         WHERE r.owner_id = OLD.owner_id AND r.zone_id = OLD.id AND coalesce(nullif(OLD.owner_id, 0), r.created_by) IS NOT NULL
         GROUP BY 1 ORDER BY 1
    LOOP
        PERFORM canopy.charge_storage(c.user_id, -c.records, -c.field_bytes, -c.asset_bytes);
    END LOOP;
    -- The thumbnails of the zone's shares, which go in the same cascade.
    -- (One table's plain lookup, then the charge: Citus plans the lookup in
    -- the zone's shard's task, not a charge over a subquery.)
    IF OLD.owner_id <> 0 THEN
        SELECT sum(octet_length(s.thumbnail))::bigint INTO thumbnails FROM canopy.shares s
         WHERE s.owner_id = OLD.owner_id AND s.zone_id = OLD.id AND s.thumbnail IS NOT NULL;
        IF thumbnails > 0 THEN
            PERFORM canopy.charge_storage(OLD.owner_id, 0, -thumbnails, 0);
        END IF;
    END IF;
    RETURN OLD;
END
$$;
COMMENT ON FUNCTION canopy.zones_refund_storage() IS 'Frees the storage of a zone''s records when the zone is deleted.';

DROP TRIGGER IF EXISTS zones_refund_storage ON canopy.zones;
CREATE TRIGGER zones_refund_storage BEFORE DELETE ON canopy.zones
    FOR EACH ROW EXECUTE FUNCTION canopy.zones_refund_storage();

-- An upload counts against its uploader's quota from when it is recorded
-- until a record holds it (then the record's charge replaces it) or it
-- expires.
CREATE OR REPLACE FUNCTION canopy.uploads_check_storage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_stored bigint;
BEGIN
    INSERT INTO canopy.storage_usage (user_id) VALUES (NEW.user_id) ON CONFLICT (user_id) DO NOTHING;
    -- An update (not SELECT … FOR UPDATE): it makes a new version of the row,
    -- so a writer of this user in REPEATABLE READ whose snapshot is older
    -- fails to serialize instead of checking without this upload.
    UPDATE canopy.storage_usage SET record_count = record_count WHERE user_id = NEW.user_id
    RETURNING field_bytes + asset_bytes INTO v_stored;
    PERFORM canopy.check_storage_quota(NEW.user_id, v_stored + NEW.size, NEW.size);
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION canopy.uploads_check_storage() IS 'Refuses an upload (CN007) that would leave its uploader''s stored bytes and pending uploads over their quota.';

DROP TRIGGER IF EXISTS uploads_check_storage ON canopy.uploads;
CREATE TRIGGER uploads_check_storage BEFORE INSERT ON canopy.uploads
    FOR EACH ROW EXECUTE FUNCTION canopy.uploads_check_storage();

REVOKE ALL ON FUNCTION canopy.records_charge_storage() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.zones_refund_storage() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.uploads_check_storage() FROM PUBLIC, canopy_gateway;

-- A share's thumbnail (cloudkit.share.thumbnailImageData, up to 256 KiB)
-- is charged to its zone's owner like a record's fields (issue 64: one per
-- zone or root, unlimited zones, charged to no one). A share whose zone is
-- being deleted was refunded by zones_refund_storage: its zone is gone here.
CREATE OR REPLACE FUNCTION canopy.shares_charge_storage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint;
    change bigint := coalesce(octet_length(CASE WHEN TG_OP <> 'DELETE' THEN NEW.thumbnail END), 0)
                   - coalesce(octet_length(CASE WHEN TG_OP <> 'INSERT' THEN OLD.thumbnail END), 0);
    -- Plain variables: Citus plans a lookup over them in a shard's task.
    zone bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.zone_id ELSE NEW.zone_id END;
    zone_owner bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.owner_id ELSE NEW.owner_id END;
BEGIN
    IF change <> 0 THEN
        SELECT z.owner_id INTO owner FROM canopy.zones z WHERE z.id = zone AND z.owner_id = zone_owner;
        IF owner <> 0 THEN
            PERFORM canopy.charge_storage(owner, 0, change, 0);
        END IF;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION canopy.shares_charge_storage() IS 'Charges a zone''s owner for its shares'' thumbnails (and frees them); refuses growth past a quota (CN007).';

DROP TRIGGER IF EXISTS shares_charge_storage ON canopy.shares;
CREATE TRIGGER shares_charge_storage AFTER INSERT OR UPDATE OF thumbnail OR DELETE ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_charge_storage();
REVOKE ALL ON FUNCTION canopy.shares_charge_storage() FROM PUBLIC, canopy_gateway;

-- What is stored, counted again from the records in the transaction that
-- installs the triggers above (a new database's, an upgrade's, and each time
-- this file changes), while writers are kept out: the usage rows then hold
-- exactly what the records cost, with no write between the count and the
-- triggers. The DROP TRIGGERs above hold records, zones and shares in ACCESS
-- EXCLUSIVE mode until the transaction ends, on every engine; a LOCK TABLE
-- here deadlocked on Citus with those DROPs' connections to the shards
-- (docs/plans/ISSUE_67_SCHEMA_MAP.md §8). As canopy_owner, whose
-- connections changed the shards in this transaction (Citus refuses another
-- role's read of them); its canopy_owner_all policies let it see every row.
UPDATE canopy.storage_usage SET record_count = 0, field_bytes = 0, asset_bytes = 0
 WHERE record_count <> 0 OR field_bytes <> 0 OR asset_bytes <> 0;
INSERT INTO canopy.storage_usage AS s (user_id, record_count, field_bytes, asset_bytes)
SELECT c.charged, count(*), sum(canopy.record_bytes(r.fields, r.record_name, r.record_type, r.parent_name)), sum(canopy.record_asset_bytes(r.fields))
  FROM canopy.records r
  JOIN canopy.zones z ON z.id = r.zone_id AND z.owner_id = r.owner_id
  CROSS JOIN LATERAL (SELECT coalesce(nullif(z.owner_id, 0), r.created_by) AS charged) c
  JOIN canopy.users u ON u.id = c.charged
 GROUP BY c.charged
ON CONFLICT (user_id) DO UPDATE
   SET record_count = EXCLUDED.record_count, field_bytes = EXCLUDED.field_bytes, asset_bytes = EXCLUDED.asset_bytes;
-- Share thumbnails, charged to their zone's owner (shares_charge_storage).
INSERT INTO canopy.storage_usage AS s (user_id, field_bytes)
SELECT z.owner_id, sum(octet_length(sh.thumbnail))
  FROM canopy.shares sh
  JOIN canopy.zones z ON z.id = sh.zone_id AND z.owner_id = sh.owner_id
  JOIN canopy.users u ON u.id = z.owner_id
 WHERE sh.thumbnail IS NOT NULL AND z.owner_id <> 0
 GROUP BY z.owner_id
ON CONFLICT (user_id) DO UPDATE SET field_bytes = s.field_bytes + EXCLUDED.field_bytes;
