-- The database feed's clocks (migrations/0047, DECISIONS 149 and 173):
-- deferred triggers zones_clock and zone_departures_clock, which at commit
-- give each zone a transaction changed, and each departure it wrote, its
-- owner's next position (canopy.tick_owner_clock, and why the positions
-- follow commit order, in sql/functions/change_feeds.sql).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

-- At commit, a zone this transaction created or changed (its feed_base
-- moved, by canopy.touch_zone) takes its owner's next position, once a
-- transaction; a zone deleted in it is skipped (zones_before_delete marks
-- it), as is the public zone, which has no database feed (the trigger's
-- WHEN).
CREATE OR REPLACE FUNCTION canopy.zones_clock() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ticked bigint;
BEGIN
    IF current_setting('canopy.zone_clocked_' || NEW.id, true) = 'y' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('canopy.zone_clocked_' || NEW.id, 'y', true);
    ticked := canopy.tick_owner_clock(NEW.owner_id);
    UPDATE canopy.zones SET changed_position = ticked WHERE id = NEW.id AND owner_id = NEW.owner_id;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION canopy.zones_clock() FROM PUBLIC, canopy_gateway;

-- At commit, a departure written in this transaction takes its owner's
-- next position.
CREATE OR REPLACE FUNCTION canopy.zone_departures_clock() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ticked bigint;
BEGIN
    ticked := canopy.tick_owner_clock(NEW.owner_id);
    UPDATE canopy.zone_departures SET change_position = ticked WHERE id = NEW.id AND owner_id = NEW.owner_id;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION canopy.zone_departures_clock() FROM PUBLIC, canopy_gateway;

DROP TRIGGER IF EXISTS zones_clock ON canopy.zones;
CREATE CONSTRAINT TRIGGER zones_clock AFTER INSERT OR UPDATE OF feed_base ON canopy.zones
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.owner_id <> 0)
    EXECUTE FUNCTION canopy.zones_clock();

DROP TRIGGER IF EXISTS zone_departures_clock ON canopy.zone_departures;
CREATE CONSTRAINT TRIGGER zone_departures_clock AFTER INSERT ON canopy.zone_departures
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    EXECUTE FUNCTION canopy.zone_departures_clock();
