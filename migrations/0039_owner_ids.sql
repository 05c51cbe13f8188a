-- 0039: every zone-scoped row carries its zone's owner (issue 67, step 1;
-- DECISIONS 148, 156).
--
-- On Citus these tables are distributed by the zone owner's id, so each
-- row needs it in a column of its own: records, tombstones, shares,
-- participants, share_requests and push_outbox get `owner_id` (zones,
-- memberships, zone_departures and share_activity have it already). It is
-- the same on a single PostgreSQL, so one schema serves both engines.
--
-- * The owner is kept true by the database: each table's reference to its
--   parent now includes the owner, `(zone_id, owner_id)` to zones
--   `(id, owner_id)` and `(share_id, owner_id)` to shares `(id, owner_id)`,
--   so a row can carry no other owner than its zone's. The old one-column
--   references go; the new ones cascade as they did.
-- * The owner comes last in each key (`(id, owner_id)`, never
--   `(owner_id, id)`): the index still serves the lookups by id a single
--   PostgreSQL makes today, and Citus accepts a key that holds the
--   distribution column anywhere.
-- * Writers that know the owner supply it (sql/); a row inserted without
--   one (psql, an old writer) gets its parent's from a BEFORE INSERT
--   trigger, sql/triggers/owner_ids.sql, which does nothing when the
--   owner is given. Loaders that turn triggers off
--   (session_replication_role = replica) must give it.
--
-- canopy.membership_derivation is replaced (it supersedes 0038's, which
-- superseded 0025's): its share rows join by the owner too.
--
-- The rows that exist get their owners here, with triggers off (this is
-- not a change any feed must report), as the administrator, so row-level
-- security does not hide rows from the update.

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.zones ADD CONSTRAINT zones_id_owner_key UNIQUE (id, owner_id);

ALTER TABLE canopy.records ADD COLUMN owner_id bigint;
ALTER TABLE canopy.tombstones ADD COLUMN owner_id bigint;
ALTER TABLE canopy.shares ADD COLUMN owner_id bigint;
ALTER TABLE canopy.participants ADD COLUMN owner_id bigint;
ALTER TABLE canopy.share_requests ADD COLUMN owner_id bigint;
ALTER TABLE canopy.push_outbox ADD COLUMN owner_id bigint;

RESET ROLE;
SET LOCAL session_replication_role = replica;
UPDATE canopy.records r SET owner_id = z.owner_id FROM canopy.zones z WHERE z.id = r.zone_id;
UPDATE canopy.tombstones t SET owner_id = z.owner_id FROM canopy.zones z WHERE z.id = t.zone_id;
UPDATE canopy.shares s SET owner_id = z.owner_id FROM canopy.zones z WHERE z.id = s.zone_id;
UPDATE canopy.participants p SET owner_id = s.owner_id FROM canopy.shares s WHERE s.id = p.share_id;
UPDATE canopy.share_requests q SET owner_id = s.owner_id FROM canopy.shares s WHERE s.id = q.share_id;
UPDATE canopy.push_outbox o SET owner_id = z.owner_id FROM canopy.zones z WHERE z.id = o.zone_id;
-- The outbox has no reference to zones: a row of a zone deleted since is
-- still delivered to those who departed it (push_candidates reads
-- zone_departures), whose rows keep the zone's owner. One with neither has
-- nobody to tell: it goes.
UPDATE canopy.push_outbox o SET owner_id = d.owner_id
  FROM (SELECT DISTINCT zone_id, owner_id FROM canopy.zone_departures) d
 WHERE o.owner_id IS NULL AND d.zone_id = o.zone_id;
DELETE FROM canopy.push_outbox WHERE owner_id IS NULL;
SET LOCAL session_replication_role = origin;
SET LOCAL ROLE canopy_owner;

-- The triggers that give a row written without an owner its zone's or
-- share's, here already: the functions of sql/ that write these tables are
-- still the old ones until the repeatable files are applied, in a
-- transaction of their own after this one, and a gateway serving meanwhile
-- must not fail every write on NOT NULL. sql/triggers/owner_ids.sql
-- defines the same again.
CREATE OR REPLACE FUNCTION canopy.owner_from_zone() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT z.owner_id INTO NEW.owner_id FROM canopy.zones z WHERE z.id = NEW.zone_id;
    RETURN NEW;
END
$$;
CREATE OR REPLACE FUNCTION canopy.owner_from_share() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT s.owner_id INTO NEW.owner_id FROM canopy.shares s WHERE s.id = NEW.share_id;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION canopy.owner_from_zone() FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.owner_from_share() FROM PUBLIC;
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.records
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_zone();
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.tombstones
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_zone();
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.shares
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_zone();
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.push_outbox
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_zone();
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.participants
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_share();
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.share_requests
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_share();

ALTER TABLE canopy.records ALTER COLUMN owner_id SET NOT NULL;
ALTER TABLE canopy.tombstones ALTER COLUMN owner_id SET NOT NULL;
ALTER TABLE canopy.shares ALTER COLUMN owner_id SET NOT NULL;
ALTER TABLE canopy.participants ALTER COLUMN owner_id SET NOT NULL;
ALTER TABLE canopy.share_requests ALTER COLUMN owner_id SET NOT NULL;
ALTER TABLE canopy.push_outbox ALTER COLUMN owner_id SET NOT NULL;

-- The references, with the owner.
ALTER TABLE canopy.shares ADD CONSTRAINT shares_id_owner_key UNIQUE (id, owner_id);
ALTER TABLE canopy.participants ADD CONSTRAINT participants_id_owner_key UNIQUE (id, owner_id);

ALTER TABLE canopy.records DROP CONSTRAINT records_zone_id_fkey,
    ADD CONSTRAINT records_zone_fkey FOREIGN KEY (zone_id, owner_id) REFERENCES canopy.zones (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.tombstones DROP CONSTRAINT tombstones_zone_id_fkey,
    ADD CONSTRAINT tombstones_zone_fkey FOREIGN KEY (zone_id, owner_id) REFERENCES canopy.zones (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.shares DROP CONSTRAINT shares_zone_id_fkey,
    ADD CONSTRAINT shares_zone_fkey FOREIGN KEY (zone_id, owner_id) REFERENCES canopy.zones (id, owner_id) ON DELETE CASCADE;
-- A share's root: the record, in the share's zone, of the share's owner.
ALTER TABLE canopy.shares DROP CONSTRAINT shares_root_record_id_zone_id_fkey;
ALTER TABLE canopy.records DROP CONSTRAINT records_id_zone_id_key,
    ADD CONSTRAINT records_id_zone_owner_key UNIQUE (id, zone_id, owner_id);
ALTER TABLE canopy.shares ADD CONSTRAINT shares_root_fkey FOREIGN KEY (root_record_id, zone_id, owner_id)
    REFERENCES canopy.records (id, zone_id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.participants DROP CONSTRAINT participants_share_id_fkey,
    ADD CONSTRAINT participants_share_fkey FOREIGN KEY (share_id, owner_id) REFERENCES canopy.shares (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.share_requests DROP CONSTRAINT share_requests_share_id_fkey,
    ADD CONSTRAINT share_requests_share_fkey FOREIGN KEY (share_id, owner_id) REFERENCES canopy.shares (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.memberships DROP CONSTRAINT memberships_zone_id_fkey,
    ADD CONSTRAINT memberships_zone_fkey FOREIGN KEY (zone_id, owner_id) REFERENCES canopy.zones (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.memberships DROP CONSTRAINT memberships_share_id_fkey,
    ADD CONSTRAINT memberships_share_fkey FOREIGN KEY (share_id, owner_id) REFERENCES canopy.shares (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.memberships DROP CONSTRAINT memberships_participant_id_fkey,
    ADD CONSTRAINT memberships_participant_fkey FOREIGN KEY (participant_id, owner_id) REFERENCES canopy.participants (id, owner_id) ON DELETE CASCADE;

COMMENT ON COLUMN canopy.records.owner_id IS 'The zone''s owner (canopy.zones.owner_id; 0 in the public zone): on Citus, what the row is distributed by.';
COMMENT ON COLUMN canopy.tombstones.owner_id IS 'The zone''s owner (canopy.zones.owner_id; 0 in the public zone): on Citus, what the row is distributed by.';
COMMENT ON COLUMN canopy.shares.owner_id IS 'The zone''s owner (canopy.zones.owner_id): on Citus, what the row is distributed by.';
COMMENT ON COLUMN canopy.participants.owner_id IS 'The share''s zone''s owner (canopy.shares.owner_id): on Citus, what the row is distributed by.';
COMMENT ON COLUMN canopy.share_requests.owner_id IS 'The share''s zone''s owner (canopy.shares.owner_id): on Citus, what the row is distributed by.';
COMMENT ON COLUMN canopy.push_outbox.owner_id IS 'The zone''s owner (canopy.zones.owner_id; 0 in the public zone): on Citus, what the row is distributed by.';

-- canopy.membership_derivation (migrations/0014, 0025, 0038) joins by the
-- owner too, so what the membership triggers read of it stays on one
-- owner's rows (one shard on Citus).
CREATE OR REPLACE VIEW canopy.membership_derivation WITH (security_invoker = true) AS
SELECT z.owner_id AS user_id, z.id AS zone_id, z.owner_id, NULL::bigint AS share_id, NULL::bigint AS participant_id,
       NULL::bigint AS root_record_id, 'OWNER'::text AS role, true AS can_write
  FROM canopy.zones z
 WHERE z.owner_id <> 0
UNION ALL
SELECT p.user_id, s.zone_id, p.owner_id, s.id, p.id, s.root_record_id, p.role, p.permission = 'READ_WRITE'
  FROM canopy.participants p
  JOIN canopy.shares s ON s.id = p.share_id AND s.owner_id = p.owner_id
 WHERE p.status = 'ACCEPTED' AND p.user_id IS NOT NULL;
