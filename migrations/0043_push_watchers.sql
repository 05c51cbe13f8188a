-- 0043: who may be woken by push, in a table every node reads (issue 67,
-- step 1; DECISIONS 162).
--
-- A change to a zone queues a push outbox row only when a push
-- subscription could cover it (canopy.push_covered, called by touch_zone
-- in the records', shares' and participants' triggers): one of the zone's
-- members has a subscription, or, in the public zone, somebody has a
-- PUBLIC one. It read push_subscriptions, which on Citus is not on the
-- zone's node: the triggers run on the zone's shard and may reach only
-- co-located shards and reference tables. canopy.push_watchers holds, per
-- user, how many subscriptions they have and how many are PUBLIC, kept by
-- a trigger on push_subscriptions; on Citus it is a reference table (a
-- row per subscribing user, written when a subscription is saved or
-- deleted, rarely). push_covered then joins the zone's memberships, on
-- the zone's shard, to it.
--
-- The trigger is defined here as well as in sql/triggers/push_subscriptions.sql,
-- and made before the counts are taken, so that a subscription saved
-- between this migration and the repeatable files is counted, and none is
-- saved while they are counted (CREATE TRIGGER holds the table).

SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.push_watchers (
    user_id               bigint PRIMARY KEY REFERENCES canopy.users (id) ON DELETE CASCADE,
    subscriptions         integer NOT NULL CHECK (subscriptions >= 0),
    public_subscriptions  integer NOT NULL CHECK (public_subscriptions BETWEEN 0 AND subscriptions)
);
COMMENT ON TABLE canopy.push_watchers IS 'How many push subscriptions each user has (and how many are PUBLIC): what canopy.push_covered reads, on the zone''s node on Citus, where it is a reference table. Kept by the push_subscriptions_watch trigger; a row stays at 0 once its user has none.';
COMMENT ON COLUMN canopy.push_watchers.user_id IS 'The subscribing user (canopy.push_subscriptions.user_id).';
COMMENT ON COLUMN canopy.push_watchers.subscriptions IS 'The user''s rows in canopy.push_subscriptions.';
COMMENT ON COLUMN canopy.push_watchers.public_subscriptions IS 'Of those, the ones whose scope is PUBLIC (QUERY subscriptions on the public zone).';

ALTER TABLE canopy.push_watchers ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.push_watchers FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.push_watchers TO canopy_owner USING (true) WITH CHECK (true);
REVOKE ALL ON TABLE canopy.push_watchers FROM PUBLIC;

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
REVOKE ALL ON FUNCTION canopy.push_subscriptions_watch() FROM PUBLIC, canopy_gateway;
CREATE TRIGGER push_subscriptions_watch AFTER INSERT OR DELETE OR UPDATE OF user_id, scope ON canopy.push_subscriptions
    FOR EACH ROW EXECUTE FUNCTION canopy.push_subscriptions_watch();

INSERT INTO canopy.push_watchers (user_id, subscriptions, public_subscriptions)
SELECT user_id, count(*), count(*) FILTER (WHERE scope = 'PUBLIC')
  FROM canopy.push_subscriptions GROUP BY user_id;
