-- Push subscriptions' trigger (migrations/0043, DECISIONS 162):
-- push_subscriptions_watch keeps canopy.push_watchers, each user's count
-- of subscriptions and of PUBLIC ones, which canopy.push_covered reads on
-- the zone's node (sql/functions/push.sql). Counted up and down under the
-- watcher row's lock, so writers of one user's subscriptions at once
-- leave the right count.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definition in migrations/0043.

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.push_subscriptions_watch() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE canopy.push_watchers w
           SET subscriptions = w.subscriptions - 1,
               public_subscriptions = w.public_subscriptions - (OLD.scope = 'PUBLIC')::integer
         WHERE w.user_id = OLD.user_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO canopy.push_watchers AS w (user_id, subscriptions, public_subscriptions)
        VALUES (NEW.user_id, 1, (NEW.scope = 'PUBLIC')::integer)
        ON CONFLICT (user_id) DO UPDATE
           SET subscriptions = w.subscriptions + 1,
               public_subscriptions = w.public_subscriptions + EXCLUDED.public_subscriptions;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION canopy.push_subscriptions_watch() IS 'Keeps canopy.push_watchers: counts a user''s push subscriptions (and PUBLIC ones) up and down.';
REVOKE ALL ON FUNCTION canopy.push_subscriptions_watch() FROM PUBLIC, canopy_gateway;

DROP TRIGGER IF EXISTS push_subscriptions_watch ON canopy.push_subscriptions;
CREATE TRIGGER push_subscriptions_watch AFTER INSERT OR DELETE OR UPDATE OF user_id, scope ON canopy.push_subscriptions
    FOR EACH ROW EXECUTE FUNCTION canopy.push_subscriptions_watch();
