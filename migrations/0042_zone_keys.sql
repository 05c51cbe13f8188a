-- 0042: zones keyed by (id, owner_id), the last key without the owner
-- (issue 67, step 1; DECISIONS 157, 160).
--
-- push_subscriptions referenced zones by id alone, the one reference that
-- kept zones_pkey at (id). A subscription is its subscriber's, and the
-- subscriber is not the zone's owner: on Citus subscriptions are
-- distributed by the subscriber (DECISIONS 160), where a reference to the
-- zone's shard cannot exist. So the reference goes, and the subscriptions
-- of a zone go with it through the zone's trigger (zones_forget_subscriptions,
-- sql/triggers/zones.sql), as the reference's ON DELETE CASCADE did:
-- whoever deletes it (deleteZone, or an owner's account deleted).
--
-- Then zones' key becomes 0039's (id, owner_id), and the references to it
-- (records, tombstones, shares, memberships) move to the key: one index,
-- not two. Re-adding them checks every referencing row once, here.
--
-- The trigger is defined here as well as in sql/triggers/zones.sql, so
-- that a zone deleted between this migration and the repeatable files
-- (applied in a transaction after this one) takes its subscriptions.

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.push_subscriptions DROP CONSTRAINT push_subscriptions_zone_id_fkey;

ALTER TABLE canopy.records DROP CONSTRAINT records_zone_fkey;
ALTER TABLE canopy.tombstones DROP CONSTRAINT tombstones_zone_fkey;
ALTER TABLE canopy.shares DROP CONSTRAINT shares_zone_fkey;
ALTER TABLE canopy.memberships DROP CONSTRAINT memberships_zone_fkey;
ALTER TABLE canopy.zones DROP CONSTRAINT zones_pkey, DROP CONSTRAINT zones_id_owner_key,
    ADD CONSTRAINT zones_pkey PRIMARY KEY (id, owner_id);
ALTER TABLE canopy.records ADD CONSTRAINT records_zone_fkey
    FOREIGN KEY (zone_id, owner_id) REFERENCES canopy.zones (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.tombstones ADD CONSTRAINT tombstones_zone_fkey
    FOREIGN KEY (zone_id, owner_id) REFERENCES canopy.zones (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.shares ADD CONSTRAINT shares_zone_fkey
    FOREIGN KEY (zone_id, owner_id) REFERENCES canopy.zones (id, owner_id) ON DELETE CASCADE;
ALTER TABLE canopy.memberships ADD CONSTRAINT memberships_zone_fkey
    FOREIGN KEY (zone_id, owner_id) REFERENCES canopy.zones (id, owner_id) ON DELETE CASCADE;

COMMENT ON COLUMN canopy.push_subscriptions.zone_id IS 'ZONE: the zone; QUERY: the zone, or NULL for every zone of the scope. No reference (the zone is its owner''s, the subscription its subscriber''s: DECISIONS 160); the zone''s trigger zones_forget_subscriptions removes the subscriptions of a zone deleted.';

CREATE OR REPLACE FUNCTION canopy.zones_forget_subscriptions() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM canopy.push_subscriptions WHERE zone_id = OLD.id;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION canopy.zones_forget_subscriptions() FROM PUBLIC, canopy_gateway;
CREATE TRIGGER zones_forget_subscriptions AFTER DELETE ON canopy.zones
    FOR EACH ROW EXECUTE FUNCTION canopy.zones_forget_subscriptions();
