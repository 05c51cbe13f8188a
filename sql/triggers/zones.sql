-- Triggers on canopy.zones: zones_before_delete, zones_after_insert,
-- zones_forget_subscriptions.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0007 and 0010.

SET LOCAL ROLE canopy_owner;

-- A zone being deleted: its owner (PRIVATE) and every accepted participant
-- of its shares (SHARED) stop seeing it.
--
-- A zone being deleted is no longer touched: the records it takes with it
-- must find it gone (records_after_write records nothing for them).
CREATE OR REPLACE FUNCTION canopy.zones_before_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM set_config('canopy.zone_position_' || OLD.id, '', true);
    -- Nor does it take a position of its owner's clock at commit
    -- (zones_clock): its departures do.
    PERFORM set_config('canopy.zone_clocked_' || OLD.id, 'y', true);
    -- The DELETE holds the zone's row lock already; touching the row being
    -- deleted is not allowed, so write the departures here, at a position
    -- above every one the zone gave (DECISIONS 165).
    -- By EXECUTE … USING (the zone's values bound): on Citus this runs in
    -- the zone's shard's task, where an INSERT … SELECT over the trigger's
    -- variables cannot be planned.
    IF OLD.owner_id <> 0 THEN                               -- the public zone: nobody's (migrations/0038)
        -- announce_txn: on Citus, the stamp canopy.announce_changes finds
        -- the deleted zone by (migrations/0048; NULL on one PostgreSQL).
        EXECUTE 'INSERT INTO canopy.zone_departures (user_id, scope, zone_id, zone_name, owner_id, owner_record_name, change_seq, announce_txn)
                 SELECT m.user_id, m.scope, $1, $2, $3, u.record_name, $4, $5
                   FROM (SELECT $3 AS user_id, ''PRIVATE'' AS scope
                         UNION
                         SELECT p.user_id, ''SHARED'' FROM canopy.participants p JOIN canopy.shares s ON s.owner_id = p.owner_id AND s.id = p.share_id
                          WHERE s.owner_id = $3 AND s.zone_id = $1 AND p.status = ''ACCEPTED'' AND p.role <> ''OWNER'' AND p.user_id IS NOT NULL) m
                   JOIN canopy.users u ON u.id = $3          -- none when the owner is being deleted
                   JOIN canopy.users gone ON gone.id = m.user_id   -- nor for a member being deleted'
            USING OLD.id, OLD.name, OLD.owner_id, (OLD.feed_base + 1) << 20, canopy.announcement_stamp();
    END IF;
    PERFORM canopy.notify_changes(OLD.id || ' ' || OLD.owner_id);
    RETURN OLD;
END
$$;

DROP TRIGGER IF EXISTS zones_before_delete ON canopy.zones;
CREATE TRIGGER zones_before_delete BEFORE DELETE ON canopy.zones
    FOR EACH ROW EXECUTE FUNCTION canopy.zones_before_delete();

-- A zone deleted takes the push subscriptions on it, its owner's and its
-- members' (migrations/0042, DECISIONS 160: they no longer reference the
-- zone, which is its owner's while a subscription is its subscriber's).
CREATE OR REPLACE FUNCTION canopy.zones_forget_subscriptions() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM canopy.push_subscriptions WHERE zone_id = OLD.id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS zones_forget_subscriptions ON canopy.zones;
CREATE TRIGGER zones_forget_subscriptions AFTER DELETE ON canopy.zones
    FOR EACH ROW EXECUTE FUNCTION canopy.zones_forget_subscriptions();

-- A zone created: its owner's databaseChanged subscriptions are told
-- (changed_xid is the creating transaction's, by default).
CREATE OR REPLACE FUNCTION canopy.zones_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM canopy.notify_changes(NEW.id || ' ' || NEW.owner_id);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS zones_after_insert ON canopy.zones;
CREATE TRIGGER zones_after_insert AFTER INSERT ON canopy.zones
    FOR EACH ROW EXECUTE FUNCTION canopy.zones_after_insert();

REVOKE ALL ON FUNCTION canopy.zones_before_delete() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.zones_after_insert() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.zones_forget_subscriptions() FROM PUBLIC, canopy_gateway;
