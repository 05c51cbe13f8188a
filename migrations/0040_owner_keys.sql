-- 0040: the owner in every key of the zone-scoped tables (issue 67, step 1;
-- DECISIONS 156, 157).
--
-- Citus refuses a primary key, unique constraint, unique index or
-- exclusion constraint that does not hold the distribution column, and
-- these tables will be distributed by the zone owner's id (148). So each
-- key gains `owner_id`, last, as 0039's references did: the indexes keep
-- serving a single PostgreSQL's lookups that do not bind the owner yet.
-- Nothing a key guaranteed is lost: an id or a zone id has one owner (the
-- references of 0039 say so), so `(id, owner_id)` is as unique as `(id)`
-- was, and `(zone_id, record_name, owner_id)` as `(zone_id, record_name)`.
--
-- The constraints keep their names (records_pkey and
-- records_zone_id_record_name_key are named by the index report, the
-- query-plan tests and `canopy schema` output). Where a table had both
-- `(id)` and 0039's `(id, owner_id)`, the primary key becomes the latter
-- and the references that used it move to the primary key: one index, not
-- two.
--
-- records.share_id referenced shares (id) ON DELETE SET NULL. Citus
-- refuses SET NULL in a reference that holds the distribution column, so
-- it becomes `(share_id, owner_id)` to shares' key with no action, and the
-- share's own BEFORE DELETE trigger clears share_id on its records (157):
-- the same UPDATE the SET NULL made, with the same record triggers.
-- canopy.shares_before_delete and canopy.participants_membership (whose
-- ON CONFLICT names the memberships key) are defined here as well as in
-- sql/triggers/shares.sql and sql/triggers/memberships.sql: the repeatable
-- files are applied in a transaction after this one, and writes between
-- the two must not fail.
--
-- Left for later, with reasons in docs/plans/ISSUE_67_SCHEMA_MAP.md §6:
-- zones_pkey (push_subscriptions still references zones (id)) and
-- shares_url_token_key (a URL token is unique across owners).

SET LOCAL ROLE canopy_owner;

-- Records: the key, recordName within a zone, and the share they are in.
ALTER TABLE canopy.records DROP CONSTRAINT records_share_id_fkey;
ALTER TABLE canopy.records DROP CONSTRAINT records_pkey,
    ADD CONSTRAINT records_pkey PRIMARY KEY (id, owner_id);
ALTER TABLE canopy.records DROP CONSTRAINT records_zone_id_record_name_key,
    ADD CONSTRAINT records_zone_id_record_name_key UNIQUE (zone_id, record_name, owner_id);

ALTER TABLE canopy.tombstones DROP CONSTRAINT tombstones_pkey,
    ADD CONSTRAINT tombstones_pkey PRIMARY KEY (id, owner_id);

-- Shares: the key takes the place of 0039's (id, owner_id), which the
-- references to shares used.
ALTER TABLE canopy.participants DROP CONSTRAINT participants_share_fkey;
ALTER TABLE canopy.memberships DROP CONSTRAINT memberships_share_fkey;
ALTER TABLE canopy.share_requests DROP CONSTRAINT share_requests_share_fkey;
ALTER TABLE canopy.shares DROP CONSTRAINT shares_pkey, DROP CONSTRAINT shares_id_owner_key,
    ADD CONSTRAINT shares_pkey PRIMARY KEY (id, owner_id);
ALTER TABLE canopy.shares DROP CONSTRAINT shares_one_kind_per_zone,
    ADD CONSTRAINT shares_one_kind_per_zone EXCLUDE USING gist (zone_id WITH =, owner_id WITH =, kind WITH <>);
DROP INDEX canopy.shares_one_zone_wide_per_zone;
CREATE UNIQUE INDEX shares_one_zone_wide_per_zone ON canopy.shares (zone_id, owner_id) WHERE root_record_id IS NULL;
DROP INDEX canopy.shares_one_per_root;
CREATE UNIQUE INDEX shares_one_per_root ON canopy.shares (root_record_id, owner_id) WHERE root_record_id IS NOT NULL;

ALTER TABLE canopy.participants ADD CONSTRAINT participants_share_fkey
    FOREIGN KEY (share_id, owner_id) REFERENCES canopy.shares (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.share_requests ADD CONSTRAINT share_requests_share_fkey
    FOREIGN KEY (share_id, owner_id) REFERENCES canopy.shares (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.records ADD CONSTRAINT records_share_fkey
    FOREIGN KEY (share_id, owner_id) REFERENCES canopy.shares (id, owner_id);

-- Participants: the same, and their per-share uniqueness.
ALTER TABLE canopy.memberships DROP CONSTRAINT memberships_participant_fkey;
ALTER TABLE canopy.participants DROP CONSTRAINT participants_pkey, DROP CONSTRAINT participants_id_owner_key,
    ADD CONSTRAINT participants_pkey PRIMARY KEY (id, owner_id);
DROP INDEX canopy.participants_share_user;
CREATE UNIQUE INDEX participants_share_user ON canopy.participants (share_id, user_id, owner_id) WHERE user_id IS NOT NULL;
DROP INDEX canopy.participants_share_email;
CREATE UNIQUE INDEX participants_share_email ON canopy.participants (share_id, email, owner_id) WHERE email IS NOT NULL;
DROP INDEX canopy.participants_share_phone;
CREATE UNIQUE INDEX participants_share_phone ON canopy.participants (share_id, phone, owner_id) WHERE phone IS NOT NULL;
DROP INDEX canopy.participants_one_owner;
CREATE UNIQUE INDEX participants_one_owner ON canopy.participants (share_id, owner_id) WHERE role = 'OWNER';

-- Memberships.
ALTER TABLE canopy.memberships DROP CONSTRAINT memberships_pkey,
    ADD CONSTRAINT memberships_pkey PRIMARY KEY (id, owner_id);
ALTER TABLE canopy.memberships DROP CONSTRAINT memberships_participant_id_key,
    ADD CONSTRAINT memberships_participant_id_key UNIQUE (participant_id, owner_id);
DROP INDEX canopy.memberships_zone_owner;
CREATE UNIQUE INDEX memberships_zone_owner ON canopy.memberships (zone_id, owner_id) WHERE share_id IS NULL;
ALTER TABLE canopy.memberships ADD CONSTRAINT memberships_share_fkey
    FOREIGN KEY (share_id, owner_id) REFERENCES canopy.shares (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.memberships ADD CONSTRAINT memberships_participant_fkey
    FOREIGN KEY (participant_id, owner_id) REFERENCES canopy.participants (id, owner_id) ON DELETE CASCADE;

-- The rest: a key by id alone.
ALTER TABLE canopy.zone_departures DROP CONSTRAINT zone_departures_pkey,
    ADD CONSTRAINT zone_departures_pkey PRIMARY KEY (id, owner_id);
ALTER TABLE canopy.share_requests DROP CONSTRAINT share_requests_pkey,
    ADD CONSTRAINT share_requests_pkey PRIMARY KEY (id, owner_id);
ALTER TABLE canopy.share_requests DROP CONSTRAINT share_requests_share_id_user_id_key,
    ADD CONSTRAINT share_requests_share_id_user_id_key UNIQUE (share_id, user_id, owner_id);
ALTER TABLE canopy.push_outbox DROP CONSTRAINT push_outbox_pkey,
    ADD CONSTRAINT push_outbox_pkey PRIMARY KEY (id, owner_id);

-- Share activity: canopy.log_share_activity has always given the owner
-- (it writes nothing when it finds none), so no row lacks one; the column
-- says so now, as a key column must.
ALTER TABLE canopy.share_activity ALTER COLUMN owner_id SET NOT NULL;
ALTER TABLE canopy.share_activity DROP CONSTRAINT share_activity_pkey,
    ADD CONSTRAINT share_activity_pkey PRIMARY KEY (id, owner_id);

-- The two trigger functions the new keys change (see the header); the
-- repeatable files define the same.
CREATE OR REPLACE FUNCTION canopy.shares_before_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM canopy.touch_zone(OLD.zone_id, OLD.owner_id);
    PERFORM canopy.record_departure(p.user_id, 'SHARED', OLD.zone_id, OLD.owner_id)
       FROM canopy.participants p
      WHERE p.owner_id = OLD.owner_id AND p.share_id = OLD.id AND p.status = 'ACCEPTED' AND p.role <> 'OWNER' AND p.user_id IS NOT NULL;
    UPDATE canopy.records SET share_id = NULL WHERE owner_id = OLD.owner_id AND share_id = OLD.id;
    RETURN OLD;
END
$$;

CREATE OR REPLACE FUNCTION canopy.participants_membership() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.status = 'ACCEPTED' AND NEW.user_id IS NOT NULL THEN
        INSERT INTO canopy.memberships (user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write)
        SELECT user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write
          FROM canopy.membership_derivation WHERE owner_id = NEW.owner_id AND participant_id = NEW.id
        ON CONFLICT (participant_id, owner_id) DO UPDATE
            SET user_id = EXCLUDED.user_id, role = EXCLUDED.role, can_write = EXCLUDED.can_write;
    ELSIF TG_OP = 'UPDATE' THEN
        DELETE FROM canopy.memberships WHERE owner_id = NEW.owner_id AND participant_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;
