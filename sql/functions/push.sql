-- Push (issue 23, docs/PUSH.md): canopy.register_push_device (nine and
-- ten arguments; the tenth, the VAPID key, needs migrations/0024),
-- canopy.push_device_vapid_key,
-- canopy.push_covered, canopy.claim_push_outbox, canopy.push_candidates,
-- canopy.finish_push_outbox, canopy.claim_push_deliveries,
-- canopy.push_delivered, canopy.push_failed, canopy.push_device_gone,
-- canopy.push_backlog; the web courier's canopy.register_courier,
-- canopy.courier_of_caller, canopy.courier_poll and canopy.courier_take
-- (migrations/0036). The
-- outbox's writer is canopy.touch_zone (change_feeds.sql).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- The gateway reads and writes a user's own subscriptions and devices as
-- that user, under row-level security. Only the deliverer reads across
-- users, through the functions below: they return identifiers and where to
-- send, never a record.

SET LOCAL ROLE canopy_owner;

-- Registers a device for the caller, or finds the one registered already
-- (apps register at every launch): an APNs token or Web Push endpoint
-- belongs to one user at a time, so one another user registered moves to
-- the caller (the phone changed hands; its old owner's notifications must
-- stop). A webhook URL registered again gets the new secret. Returns the
-- device's id.
-- p_vapid_public_key: for WEB_PUSH, the VAPID public key the gateway hands
-- pages now (pushConfiguration), which the subscription is bound to.
CREATE OR REPLACE FUNCTION canopy.register_push_device(
    p_kind text, p_apns_token text, p_apns_environment text, p_apns_topic text,
    p_endpoint text, p_p256dh bytea, p_auth bytea, p_webhook_url text, p_webhook_secret bytea,
    p_vapid_public_key text
) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller bigint := canopy.current_user_id();
    device uuid;
BEGIN
    IF caller IS NULL THEN
        RAISE EXCEPTION 'nobody is signed in' USING ERRCODE = 'CN001';
    END IF;
    IF p_kind = 'APNS' THEN
        DELETE FROM canopy.push_devices
         WHERE kind = 'APNS' AND apns_token = p_apns_token AND apns_topic = p_apns_topic AND user_id <> caller;
        INSERT INTO canopy.push_devices (user_id, kind, apns_token, apns_environment, apns_topic)
        VALUES (caller, 'APNS', p_apns_token, p_apns_environment, p_apns_topic)
        ON CONFLICT (apns_token, apns_topic) WHERE kind = 'APNS'
        DO UPDATE SET apns_environment = EXCLUDED.apns_environment, failing_since = NULL
        RETURNING id INTO device;
    ELSIF p_kind = 'WEB_PUSH' THEN
        DELETE FROM canopy.push_devices WHERE kind = 'WEB_PUSH' AND endpoint = p_endpoint AND user_id <> caller;
        INSERT INTO canopy.push_devices (user_id, kind, endpoint, p256dh, auth, vapid_public_key)
        VALUES (caller, 'WEB_PUSH', p_endpoint, p_p256dh, p_auth, p_vapid_public_key)
        ON CONFLICT (endpoint) WHERE kind = 'WEB_PUSH'
        DO UPDATE SET p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, vapid_public_key = EXCLUDED.vapid_public_key,
                      failing_since = NULL
        RETURNING id INTO device;
    ELSIF p_kind = 'WEBHOOK' THEN
        INSERT INTO canopy.push_devices (user_id, kind, webhook_url, webhook_secret)
        VALUES (caller, 'WEBHOOK', p_webhook_url, p_webhook_secret)
        ON CONFLICT (user_id, webhook_url) WHERE kind = 'WEBHOOK'
        DO UPDATE SET webhook_secret = EXCLUDED.webhook_secret, failing_since = NULL
        RETURNING id INTO device;
    ELSE
        RAISE EXCEPTION 'unknown device kind %', p_kind USING ERRCODE = 'CN004';
    END IF;
    RETURN device;
END
$$;

-- The nine-argument form, for a gateway older than 0024 during an upgrade:
-- the device's VAPID key is left unknown (read as the current one).
CREATE OR REPLACE FUNCTION canopy.register_push_device(
    p_kind text, p_apns_token text, p_apns_environment text, p_apns_topic text,
    p_endpoint text, p_p256dh bytea, p_auth bytea, p_webhook_url text, p_webhook_secret bytea
) RETURNS uuid
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT canopy.register_push_device(p_kind, p_apns_token, p_apns_environment, p_apns_topic,
                                       p_endpoint, p_p256dh, p_auth, p_webhook_url, p_webhook_secret, NULL)
$$;

-- The VAPID public key a Web Push device subscribed with, for the
-- deliverer (NULL: registered before keys were remembered).
CREATE OR REPLACE FUNCTION canopy.push_device_vapid_key(p_device uuid) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT vapid_public_key FROM canopy.push_devices WHERE id = p_device
$$;

-- Whether a change to the zone could concern a push subscription: one of
-- its members (the owner, accepted participants) has one, or, in the
-- public zone (owner 0), somebody has a PUBLIC one. One probe of the
-- zone's memberships joined to canopy.push_watchers (migrations/0043,
-- DECISIONS 162), both on the zone's node on Citus, where touch_zone calls
-- this from a shard's trigger (PL/pgSQL: Citus plans a SQL function's
-- parameters in no shard). Supersedes push_covered(bigint), which read
-- push_subscriptions.
DROP FUNCTION IF EXISTS canopy.push_covered(bigint);
CREATE OR REPLACE FUNCTION canopy.push_covered(p_zone_id bigint, p_owner_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    covered boolean;
BEGIN
    -- A join, so by EXECUTE … USING: in a shard's trigger on Citus, only a
    -- single table's plain lookup may use the function's variables
    -- (DECISIONS 164).
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM canopy.memberships m JOIN canopy.push_watchers w ON w.user_id = m.user_id
                             WHERE m.owner_id = $1 AND m.zone_id = $2 AND w.subscriptions > 0)'
       INTO covered USING p_owner_id, p_zone_id;
    -- The public zone (migrations/0025, 0026): its QUERY subscriptions.
    RETURN covered OR (p_owner_id = 0 AND EXISTS (SELECT 1 FROM canopy.push_watchers w WHERE w.public_subscriptions > 0));
END
$$;
-- On Citus it runs inside a shard's task (a trigger's, or a statement's on
-- the zone's shard), where its query is a nested one, which Citus must be
-- told to allow; it names the zone's owner, so it stays on that node. Set
-- only where Citus is loaded (elsewhere the name is an unknown setting).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        ALTER FUNCTION canopy.push_covered(bigint, bigint) SET citus.allow_nested_distributed_execution = on;
    END IF;
END
$$;

-- The deliverer's claim on committed changes: up to p_limit outbox rows
-- nobody holds (or whose holder's lease ran out: that gateway died), held
-- for p_lease. SKIP LOCKED lets many gateways claim at once without a
-- leader; a row is deleted (finish_push_outbox) only once fanned out, so a
-- crash in between fans it out again (deliveries merge, nothing doubles).
CREATE OR REPLACE FUNCTION canopy.claim_push_outbox(p_limit integer, p_lease interval)
    RETURNS TABLE (id bigint, zone_id bigint, after_seq bigint, origin_user bigint, origin_device uuid, created_at timestamptz,
                   trace_parent text)
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE canopy.push_outbox o SET claimed_until = now() + p_lease
     WHERE o.id IN (SELECT c.id FROM canopy.push_outbox c
                     WHERE c.claimed_until IS NULL OR c.claimed_until < now()
                     ORDER BY c.id LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING o.id, o.zone_id, o.after_seq, o.origin_user, o.origin_device, o.created_at, o.trace_parent
$$;

CREATE OR REPLACE FUNCTION canopy.finish_push_outbox(p_id bigint) RETURNS void
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM canopy.push_outbox WHERE id = p_id
$$;

-- On Citus the outbox is distributed by the zone's owner (DECISIONS 174):
-- a SQL function's parameters cannot be planned there, and FOR UPDATE
-- SKIP LOCKED does not cross shards. So there the claim reads the oldest
-- claimable rows of every shard, then claims each by its owner and id
-- with the same condition, re-checked under the row's lock (READ
-- COMMITTED re-reads a row another claimer changed): two gateways never
-- both claim a row, one may wait a moment for the other's lock. The
-- finish deletes by id on every shard (the deliverer holds no owner). One
-- PostgreSQL keeps the statements above.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        CREATE OR REPLACE FUNCTION canopy.claim_push_outbox(p_limit integer, p_lease interval)
            RETURNS TABLE (id bigint, zone_id bigint, after_seq bigint, origin_user bigint, origin_device uuid, created_at timestamptz,
                           trace_parent text)
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $body$
        DECLARE
            owners bigint[];
            ids bigint[];
        BEGIN
            -- Into arrays, not a FOR over EXECUTE: Citus cannot plan a
            -- cursor's bound parameters across shards ("could not create
            -- distributed plan" when the call itself has parameters).
            EXECUTE 'SELECT array_agg(c.owner_id ORDER BY c.id), array_agg(c.id ORDER BY c.id)
                       FROM (SELECT c.owner_id, c.id FROM canopy.push_outbox c
                              WHERE c.claimed_until IS NULL OR c.claimed_until < now() ORDER BY c.id LIMIT $1) c'
               INTO owners, ids USING p_limit;
            FOR i IN 1 .. coalesce(array_length(ids, 1), 0) LOOP
                RETURN QUERY EXECUTE
                    'UPDATE canopy.push_outbox o SET claimed_until = now() + $3
                      WHERE o.owner_id = $1 AND o.id = $2 AND (o.claimed_until IS NULL OR o.claimed_until < now())
                     RETURNING o.id, o.zone_id, o.after_seq, o.origin_user, o.origin_device, o.created_at, o.trace_parent'
                    USING owners[i], ids[i], p_lease;
            END LOOP;
        END
        $body$;
        CREATE OR REPLACE FUNCTION canopy.finish_push_outbox(p_id bigint) RETURNS void
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $body$
        BEGIN
            EXECUTE 'DELETE FROM canopy.push_outbox WHERE id = $1' USING p_id;
        END
        $body$;
    END IF;
END
$$;


-- The subscriptions a change to the zone may fire, with their users: of
-- the zone's members (PRIVATE for its owner, SHARED for participants), of
-- users who stopped seeing it in this change (their departure is at a
-- position above p_after: they are told once, and fetch to learn it), and
-- in the public zone of every user with a PUBLIC subscription on it.
-- Whether each fired is decided afterwards as its user, under row-level
-- security (PushFanOut): this only narrows the candidates.
CREATE OR REPLACE FUNCTION canopy.push_candidates(p_zone_id bigint, p_after bigint)
    RETURNS TABLE (user_id bigint, subscription_id text, kind text, scope text, zone_id bigint,
                   record_type text, filter text, args text, fires_on text[])
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- By EXECUTE: Citus cannot plan a SQL function's parameters over its
    -- tables (the memberships and departures are distributed by owner).
    RETURN QUERY EXECUTE $q$
    WITH reach AS (
        SELECT DISTINCT m.user_id, CASE WHEN m.share_id IS NULL THEN 'PRIVATE' ELSE 'SHARED' END AS scope
          FROM canopy.memberships m WHERE m.zone_id = $1
        UNION
        SELECT d.user_id, d.scope FROM canopy.zone_departures d
         WHERE d.zone_id = $1 AND d.change_seq > $2
        UNION
        -- The public zone: every user with a QUERY subscription on it
        -- (whether it fires is then decided as them, by the grants).
        SELECT s.user_id, 'PUBLIC' FROM canopy.push_subscriptions s
         WHERE s.scope = 'PUBLIC' AND s.zone_id = $1
    )
    SELECT s.user_id, s.subscription_id, s.kind, s.scope, s.zone_id, s.record_type, s.filter, s.args::text, s.fires_on
      FROM reach JOIN canopy.push_subscriptions s ON s.user_id = reach.user_id AND s.scope = reach.scope
     WHERE s.kind = 'DATABASE'
        OR (s.kind = 'ZONE' AND s.zone_id = $1)
        OR (s.kind = 'QUERY' AND (s.zone_id IS NULL OR s.zone_id = $1))
     ORDER BY s.user_id, s.subscription_id
    $q$ USING p_zone_id, p_after;
END
$$;

-- Deliveries due now, of devices not sent to within p_gap (at most one
-- push a second a device: a burst merges into the next), held for
-- p_lease, with where to send each. The only reader of webhook secrets.
CREATE OR REPLACE FUNCTION canopy.claim_push_deliveries(p_limit integer, p_lease interval, p_gap interval)
    RETURNS TABLE (device_id uuid, version bigint, subscription_ids text[], attempts integer, first_queued_at timestamptz,
                   kind text, apns_token text, apns_environment text, apns_topic text,
                   endpoint text, p256dh bytea, auth bytea, webhook_url text, webhook_secret bytea,
                   user_record_name text, trace_parent text)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- By EXECUTE … USING: Citus cannot plan a SQL function's parameters
    -- (the deliveries and devices are in its metadata, beside the
    -- reference table of users). One PostgreSQL plans it each call: the
    -- deliverer claims a batch at a time, off the request path.
    RETURN QUERY EXECUTE $q$
    WITH claimed AS (
        UPDATE canopy.push_deliveries q SET claimed_until = now() + $1
         WHERE q.device_id IN (
               SELECT c.device_id FROM canopy.push_deliveries c JOIN canopy.push_devices d ON d.id = c.device_id
                WHERE c.next_attempt_at <= now() AND (c.claimed_until IS NULL OR c.claimed_until < now())
                  -- A web courier's page takes its own (canopy.courier_take).
                  AND d.kind <> 'COURIER'
                  AND (d.last_sent_at IS NULL OR d.last_sent_at <= now() - $3)
                ORDER BY c.next_attempt_at LIMIT $2 FOR UPDATE OF c SKIP LOCKED)
        RETURNING q.device_id, q.version, q.subscription_ids, q.attempts, q.first_queued_at, q.trace_parent
    )
    SELECT c.device_id, c.version, c.subscription_ids, c.attempts, c.first_queued_at,
           d.kind, d.apns_token, d.apns_environment, d.apns_topic, d.endpoint, d.p256dh, d.auth,
           d.webhook_url, d.webhook_secret, u.record_name, c.trace_parent
      FROM claimed c JOIN canopy.push_devices d ON d.id = c.device_id JOIN canopy.users u ON u.id = d.user_id
    $q$ USING p_lease, p_limit, p_gap;
END
$$;

-- The push service accepted the notification of p_version: the delivery is
-- done, unless a change merged into it meanwhile (its version moved on):
-- then it stays, due after the one-a-second gap.
CREATE OR REPLACE FUNCTION canopy.push_delivered(p_device uuid, p_version bigint, p_gap interval) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE canopy.push_devices SET last_sent_at = now(), failing_since = NULL WHERE id = p_device;
    DELETE FROM canopy.push_deliveries WHERE device_id = p_device AND version = p_version;
    IF NOT FOUND THEN
        UPDATE canopy.push_deliveries SET claimed_until = NULL, attempts = 0, first_queued_at = now(),
               next_attempt_at = now() + p_gap
         WHERE device_id = p_device;
    END IF;
END
$$;

-- Sending failed: retried after p_retry (the deliverer's back-off, or the
-- push service's Retry-After), unless the notification has waited longer
-- than p_give_up: then it is dropped and the device marked failing (the
-- feeds keep every change; the app fetches on its next launch).
CREATE OR REPLACE FUNCTION canopy.push_failed(p_device uuid, p_retry interval, p_give_up interval) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM canopy.push_deliveries WHERE device_id = p_device AND first_queued_at < now() - p_give_up;
    IF FOUND THEN
        UPDATE canopy.push_devices SET failing_since = coalesce(failing_since, now()) WHERE id = p_device;
        RETURN false;
    END IF;
    UPDATE canopy.push_deliveries SET claimed_until = NULL, attempts = attempts + 1, next_attempt_at = now() + p_retry
     WHERE device_id = p_device;
    RETURN true;
END
$$;

-- The push service says the token or endpoint is gone for good (APNs 410
-- or BadDeviceToken, Web Push 404 or 410): the device goes, with what it
-- was owed.
CREATE OR REPLACE FUNCTION canopy.push_device_gone(p_device uuid) RETURNS void
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM canopy.push_devices WHERE id = p_device
$$;

-- For metrics: changes not yet fanned out, notifications not yet
-- accepted, and how long the oldest of those has waited (seconds).
CREATE OR REPLACE FUNCTION canopy.push_backlog()
    RETURNS TABLE (outbox bigint, pending bigint, oldest_seconds double precision)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (SELECT count(*) FROM canopy.push_outbox),
           (SELECT count(*) FROM canopy.push_deliveries q
             WHERE NOT EXISTS (SELECT 1 FROM canopy.push_devices d WHERE d.id = q.device_id AND d.kind = 'COURIER')),
           coalesce(extract(epoch FROM now() - (SELECT min(q.first_queued_at) FROM canopy.push_deliveries q
             WHERE NOT EXISTS (SELECT 1 FROM canopy.push_devices d WHERE d.id = q.device_id AND d.kind = 'COURIER')))::double precision, 0)
$$;

-- Web Services' web courier (issue 66, migrations/0036): tokens/create
-- makes the caller a COURIER device named by the SHA-256 of a token only
-- the page holds. A user keeps at most 20: one not polled for a day goes,
-- and beyond 20 the ones polled longest ago. The page's notifications wait
-- in push_deliveries (fanned out as every device's are) until it polls.
CREATE OR REPLACE FUNCTION canopy.register_courier(p_token_hash bytea) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller bigint := canopy.current_user_id();
    device uuid;
BEGIN
    IF caller IS NULL THEN
        RAISE EXCEPTION 'nobody is signed in' USING ERRCODE = 'CN005';
    END IF;
    DELETE FROM canopy.push_devices
     WHERE kind = 'COURIER' AND user_id = caller AND coalesce(last_sent_at, created_at) < now() - interval '1 day';
    DELETE FROM canopy.push_devices WHERE id IN (
        SELECT id FROM canopy.push_devices WHERE kind = 'COURIER' AND user_id = caller
         ORDER BY coalesce(last_sent_at, created_at) DESC, created_at DESC OFFSET 19);
    INSERT INTO canopy.push_devices (user_id, kind, courier_token_hash) VALUES (caller, 'COURIER', p_token_hash)
    RETURNING id INTO device;
    RETURN device;
END
$$;

-- The caller's courier of this token, else NULL: tokens/register of a
-- token tokens/create made finds it registered already.
CREATE OR REPLACE FUNCTION canopy.courier_of_caller(p_token_hash bytea) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT id FROM canopy.push_devices
     WHERE kind = 'COURIER' AND courier_token_hash = p_token_hash AND user_id = canopy.current_user_id()
$$;

-- A page's long poll begins: the courier of this token, noted as polled
-- (once a poll, not once a turn), or NULL when no courier has it (404).
CREATE OR REPLACE FUNCTION canopy.courier_poll(p_token_hash bytea) RETURNS uuid
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE canopy.push_devices d SET last_sent_at = now()
     WHERE d.kind = 'COURIER' AND d.courier_token_hash = p_token_hash
    RETURNING d.id
$$;

-- One turn of a page's long poll. No row: no courier has this token.
-- Otherwise one row: the courier and, when something waits, the first
-- subscription its notification names, taken with its kind and scope
-- (NULLs when that subscription was deleted meanwhile); the others stay
-- for the next poll. A turn with nothing waiting writes nothing.
CREATE OR REPLACE FUNCTION canopy.courier_take(p_token_hash bytea)
    RETURNS TABLE (device_id uuid, version bigint, subscription_id text, kind text, scope text)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    courier canopy.push_devices;
    waiting canopy.push_deliveries;
    taken text;
BEGIN
    SELECT * INTO courier FROM canopy.push_devices d WHERE d.kind = 'COURIER' AND d.courier_token_hash = p_token_hash;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT * INTO waiting FROM canopy.push_deliveries q WHERE q.device_id = courier.id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN QUERY SELECT courier.id, NULL::bigint, NULL::text, NULL::text, NULL::text;
        RETURN;
    END IF;
    taken := waiting.subscription_ids[1];
    IF cardinality(waiting.subscription_ids) > 1 THEN
        UPDATE canopy.push_deliveries q SET subscription_ids = waiting.subscription_ids[2:], version = q.version + 1
         WHERE q.device_id = courier.id;
    ELSE
        DELETE FROM canopy.push_deliveries q WHERE q.device_id = courier.id;
    END IF;
    RETURN QUERY
        SELECT courier.id, waiting.version, taken, s.kind, s.scope
          FROM (SELECT 1) one
          LEFT JOIN canopy.push_subscriptions s ON s.user_id = courier.user_id AND s.subscription_id = taken;
END
$$;

-- The zone a subscription watches, as the caller sees it: its name and
-- its owner's record name (NULL for the public zone's owner), no row when
-- the subscription watches no zone or the caller no longer sees it. For
-- Web Services' subscription dictionary (Projection.cloudKitSubscription).
-- A function, not the subquery it was: subscriptions are on the
-- coordinator on Citus and the zones on the workers, and Citus refuses a
-- subquery of a distributed table correlated with a coordinator's table.
-- Runs as the caller (row-level security decides what it sees); on Citus
-- its read is a nested distributed one, which Citus must be told to allow.
CREATE OR REPLACE FUNCTION canopy.subscription_zone(p_zone_id bigint)
    RETURNS TABLE (name text, owner_record_name text)
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_zone_id IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE
        'SELECT pz.name, pu.record_name FROM canopy.zones pz
           LEFT JOIN canopy.users pu ON pu.id = pz.owner_id AND pz.owner_id <> 0
          WHERE pz.id = $1 AND (pu.id IS NOT NULL OR pz.owner_id = 0)' USING p_zone_id;
END
$$;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        ALTER FUNCTION canopy.subscription_zone(bigint) SET citus.allow_nested_distributed_execution = on;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION canopy.subscription_zone(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION canopy.subscription_zone(bigint) TO canopy_gateway;

REVOKE ALL ON FUNCTION canopy.register_push_device(text, text, text, text, text, bytea, bytea, text, bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.push_covered(bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.claim_push_outbox(integer, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.finish_push_outbox(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.push_candidates(bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.claim_push_deliveries(integer, interval, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.push_delivered(uuid, bigint, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.push_failed(uuid, interval, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.push_device_gone(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.push_backlog() FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.register_courier(bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.courier_of_caller(bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.courier_take(bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION canopy.courier_poll(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION canopy.courier_poll(bytea) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.register_courier(bytea) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.courier_of_caller(bytea) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.courier_take(bytea) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.register_push_device(text, text, text, text, text, bytea, bytea, text, bytea) TO canopy_gateway;
REVOKE ALL ON FUNCTION canopy.register_push_device(text, text, text, text, text, bytea, bytea, text, bytea, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION canopy.register_push_device(text, text, text, text, text, bytea, bytea, text, bytea, text) TO canopy_gateway;
REVOKE ALL ON FUNCTION canopy.push_device_vapid_key(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION canopy.push_device_vapid_key(uuid) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.claim_push_outbox(integer, interval) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.finish_push_outbox(bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.push_candidates(bigint, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.claim_push_deliveries(integer, interval, interval) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.push_delivered(uuid, bigint, interval) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.push_failed(uuid, interval, interval) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.push_device_gone(uuid) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.push_backlog() TO canopy_gateway;
