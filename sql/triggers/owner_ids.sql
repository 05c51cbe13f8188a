-- The zone owner of a zone-scoped row inserted without one (migrations/0039,
-- DECISIONS 156): records, tombstones, shares and push_outbox take their
-- zone's; participants and share_requests their share's. Writers that know
-- the owner give it, and then these triggers do nothing (their WHEN clause
-- is false). The references `(zone_id, owner_id)` and `(share_id,
-- owner_id)` keep any owner given true.
--
-- On Citus a row without its distribution value cannot even be routed, so
-- there every writer gives it; these triggers serve a single PostgreSQL's
-- older writers and psql.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.owner_from_zone() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT z.owner_id INTO NEW.owner_id FROM canopy.zones z WHERE z.id = NEW.zone_id;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION canopy.owner_from_zone() IS 'BEFORE INSERT: a row given no owner_id gets its zone''s (NULL, refused by NOT NULL, when the zone does not exist).';

CREATE OR REPLACE FUNCTION canopy.owner_from_share() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT s.owner_id INTO NEW.owner_id FROM canopy.shares s WHERE s.id = NEW.share_id;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION canopy.owner_from_share() IS 'BEFORE INSERT: a row given no owner_id gets its share''s (NULL, refused by NOT NULL, when the share does not exist).';

-- Named to fire before the tables' other BEFORE INSERT triggers (they fire
-- in name order), so those see the owner.
DROP TRIGGER IF EXISTS a_owner_id ON canopy.records;
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.records
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_zone();
DROP TRIGGER IF EXISTS a_owner_id ON canopy.tombstones;
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.tombstones
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_zone();
DROP TRIGGER IF EXISTS a_owner_id ON canopy.shares;
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.shares
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_zone();
DROP TRIGGER IF EXISTS a_owner_id ON canopy.push_outbox;
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.push_outbox
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_zone();
DROP TRIGGER IF EXISTS a_owner_id ON canopy.participants;
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.participants
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_share();
DROP TRIGGER IF EXISTS a_owner_id ON canopy.share_requests;
CREATE TRIGGER a_owner_id BEFORE INSERT ON canopy.share_requests
    FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION canopy.owner_from_share();

REVOKE ALL ON FUNCTION canopy.owner_from_zone() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.owner_from_share() FROM PUBLIC, canopy_gateway;
