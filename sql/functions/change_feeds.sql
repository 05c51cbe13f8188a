-- Change feeds (docs/API.md §7): canopy.touch_zone, canopy.record_departure,
-- canopy.purge_change_history, canopy.claim_history_purge,
-- canopy.lock_zone_for_write, canopy.zone_feed_position, canopy.zone_range_cuts,
-- canopy.read_position, canopy.tick_owner_clock (the database feed's clocks;
-- their triggers are sql/triggers/owner_clocks.sql's).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0007 and 0010.
--
-- Two orders, each proved where it is defined:
--
-- * Within a zone, change positions follow commit order. Every write to a
--   zone first takes the zone's row lock (through canopy.touch_zone), which
--   raises the zone's feed_base by one, and keeps the lock until it
--   commits; its positions are (feed_base << 20) + 1, + 2, …
--   (canopy.draw_position). Two transactions writing one zone therefore
--   hold the lock one after the other, and the second reads the base the
--   first left, so all its positions are above the first's. A reader whose
--   snapshot shows position p of a zone also shows every committed position
--   below p, so "positions after the last one delivered" never skips
--   (docs/CHANGE_FEEDS.md has the argument in full). Positions are the
--   zone's own (DECISIONS 165): on Citus they are drawn on the zone's
--   shard, where no sequence of the coordinator reaches.
--
-- * Across zones (databaseChanges), each owner has a clock
--   (canopy.owner_clocks, migrations/0047, DECISIONS 149 and 173). At
--   commit, a deferred trigger moves the clock of the owner on by one for
--   each zone the transaction changed and each departure it wrote
--   (canopy.tick_owner_clock), and writes the new position on that zone
--   (zones.changed_position) or departure. The clock's row lock, taken at
--   commit, is held until the commit has ended, so the owner's positions
--   are given in commit order: a reader who sees position P of an owner's
--   clock sees every change of that owner numbered at or below P. A token
--   holds one position per owner, and a pass reads the clock before (or in
--   the same snapshot as) the zones and departures, and reports those
--   past the token's position and at or below the clock's. The clock and
--   the owner's zones are on one node (Citus co-locates them), so the
--   argument holds on Citus as on one PostgreSQL.
--   zones.changed_xid stays as touch_zone's "already touched in this
--   transaction", a fact of the node that wrote it.

SET LOCAL ROLE canopy_owner;

-- Which node this is: 'single' (one PostgreSQL), 'coordinator' or
-- 'worker' (Citus). A distributed table's triggers run on a worker, where
-- they may write only their own shard (DECISIONS 163, 170).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        CREATE OR REPLACE FUNCTION canopy.citus_node() RETURNS text
            LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
        AS $body$SELECT CASE WHEN citus_is_coordinator() THEN 'coordinator' ELSE 'worker' END$body$;
    ELSE
        CREATE OR REPLACE FUNCTION canopy.citus_node() RETURNS text
            LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
        AS $body$SELECT 'single'::text$body$;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION canopy.citus_node() FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.citus_node() TO canopy_gateway;

-- The number of this transaction's Citus distributed transaction (the same
-- on the coordinator and on every worker it reaches), which
-- canopy.touch_zone writes on a zone it changes and
-- canopy.announce_changes looks for (DECISIONS 172); NULL on one
-- PostgreSQL, where the triggers NOTIFY themselves.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        CREATE OR REPLACE FUNCTION canopy.announcement_stamp() RETURNS bigint
            LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
        AS $body$SELECT nullif((get_current_transaction_id()).transaction_number, 0)$body$;
    ELSE
        CREATE OR REPLACE FUNCTION canopy.announcement_stamp() RETURNS bigint
            LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
        AS $body$SELECT NULL::bigint$body$;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION canopy.announcement_stamp() FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.announcement_stamp() TO canopy_gateway;

-- NOTIFY canopy_changes with p_payload ('<zone id> <owner id>', or 'push'),
-- where the gateway hears it. On a Citus worker, nowhere (DECISIONS 163):
-- a transaction that wrote two nodes is prepared, and PostgreSQL cannot
-- prepare one that ran NOTIFY; the coordinator announces those changes
-- instead (and, until it does, the listener's heartbeat reads again). On
-- one PostgreSQL and on the coordinator, always.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        CREATE OR REPLACE FUNCTION canopy.notify_changes(p_payload text) RETURNS void
            LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
        AS $body$
        BEGIN
            IF citus_is_coordinator() THEN
                PERFORM pg_notify('canopy_changes', p_payload);
            END IF;
        END
        $body$;
    ELSE
        CREATE OR REPLACE FUNCTION canopy.notify_changes(p_payload text) RETURNS void
            LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
        AS $body$
        BEGIN
            PERFORM pg_notify('canopy_changes', p_payload);
        END
        $body$;
    END IF;
END
$$;
COMMENT ON FUNCTION canopy.notify_changes(text) IS 'NOTIFY canopy_changes where the gateway hears it: not on a Citus worker (DECISIONS 163).';
REVOKE ALL ON FUNCTION canopy.notify_changes(text) FROM PUBLIC, canopy_gateway;

-- Marks the zone changed by the current transaction and takes its row lock
-- (held to commit), which orders the zone's change positions; the first
-- time in a transaction it also NOTIFYs canopy_changes with
-- '<zone id> <owner id>' for live subscriptions (delivered at commit, and
-- not at all on rollback), and writes the push outbox's row (and NOTIFYs
-- 'push') when a push subscription may cover the zone. False when the zone
-- no longer exists.
--
-- * Each time it takes the lock it raises the zone's feed_base by one and
--   remembers, for the transaction, the zone's last position drawn
--   (canopy.zone_position_<zone>, a transaction-local setting, reverted
--   with the subtransaction that set it along with the lock and the base):
--   canopy.draw_position counts on from there. A session connected as
--   canopy_gateway could set it by hand and skip the zone's lock, but such
--   a session can already act as any user (canopy.user_id); this trusts it
--   no further.
--
-- * p_owner_id is the zone's owner (migrations/0039): with it the zone's
--   row is found by its distribution value on Citus, on the shard of the
--   trigger that calls this. The one-argument version is dropped.
DROP FUNCTION IF EXISTS canopy.touch_zone(bigint);
CREATE OR REPLACE FUNCTION canopy.touch_zone(p_zone_id bigint, p_owner_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint;
    touched boolean;
    base bigint;
BEGIN
    IF current_setting('canopy.zone_position_' || p_zone_id, true) <> '' THEN
        RETURN true;
    END IF;
    SELECT owner_id, changed_xid = pg_current_xact_id() INTO owner, touched
      FROM canopy.zones WHERE id = p_zone_id AND owner_id = p_owner_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- A new base even when this transaction wrote the zone before (its
    -- setting went with a subtransaction, or was set on another node):
    -- the positions drawn from it are above every one drawn before.
    -- On Citus also the distributed transaction's number, for the
    -- coordinator's announcement (DECISIONS 172; NULL on one PostgreSQL).
    UPDATE canopy.zones SET changed_xid = pg_current_xact_id(), feed_base = feed_base + 1,
                            announce_txn = canopy.announcement_stamp()
     WHERE id = p_zone_id AND owner_id = p_owner_id
    RETURNING feed_base INTO base;
    PERFORM set_config('canopy.zone_position_' || p_zone_id, (base << 20)::text, true);
    IF NOT touched THEN
        PERFORM canopy.notify_changes(p_zone_id || ' ' || owner);   -- 0: the public zone (migrations/0038)
        -- Push (issue 23, push.sql): the outbox row, in this transaction,
        -- only when a push subscription could cover the zone. Positions
        -- are drawn from the new base, so they are above after_seq.
        IF canopy.push_covered(p_zone_id, owner) THEN
            INSERT INTO canopy.push_outbox (zone_id, owner_id, after_seq, origin_user, origin_device, trace_parent)
            VALUES (p_zone_id, owner, base << 20, canopy.current_user_id(),
                    CASE WHEN current_setting('canopy.device_id', true) ~ '^[0-9a-f-]{36}$'
                         THEN current_setting('canopy.device_id', true)::uuid END,
                    -- A traced request's trace, for the webhooks (migrations/0033).
                    CASE WHEN current_setting('canopy.trace_parent', true) ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
                         THEN current_setting('canopy.trace_parent', true) END);
            PERFORM canopy.notify_changes('push');
        END IF;
    END IF;
    RETURN true;
END
$$;

-- announce_owner: on Citus, a function of the coordinator that writes an
-- owner's shard the gateway's statement does not name (a share accepted,
-- or access asked, by its URL) names that owner for this transaction's
-- canopy.announce_changes (DECISIONS 182), in a transaction-local setting of
-- the coordinator (set_config: never carried to the workers). A session
-- that sets it by hand only has more of its own changes announced, which
-- says no more than "read again". Nothing on one PostgreSQL.
CREATE OR REPLACE FUNCTION canopy.announce_owner(p_owner_id bigint) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_owner_id IS NOT NULL AND canopy.citus_node() = 'coordinator' THEN
        PERFORM set_config('canopy.announce_owners',
                           concat_ws(',', nullif(current_setting('canopy.announce_owners', true), ''), p_owner_id::text), true);
    END IF;
END
$$;
REVOKE ALL ON FUNCTION canopy.announce_owner(bigint) FROM PUBLIC, canopy_gateway;

-- zones_stamped_here: the zones of p_owner_id that this transaction
-- changed (canopy.touch_zone's stamp on their shard), read as the definer
-- for canopy.announce_changes (DECISIONS 182). Only this transaction's
-- stamp: a caller learns nothing of zones it did not change.
CREATE OR REPLACE FUNCTION canopy.zones_stamped_here(p_owner_id bigint) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    stamp bigint := canopy.announcement_stamp();
BEGIN
    IF stamp IS NOT NULL THEN
        RETURN QUERY EXECUTE 'SELECT z.id FROM canopy.zones z WHERE z.owner_id = $1 AND z.announce_txn = $2' USING p_owner_id, stamp;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION canopy.zones_stamped_here(bigint) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.zones_stamped_here(bigint) TO canopy_gateway;

-- announce_changes: on Citus, the end of every write (the gateway calls it
-- before COMMIT, DECISIONS 163 and 172). The zones of the owners named
-- (p_owner_ids, by record name p_owner_names, and those the coordinator's
-- functions named by canopy.announce_owner) that this transaction
-- changed, as canopy.touch_zone stamped them on their shards (and those
-- it deleted, by their owner's stamped departure: migrations/0048), are
-- NOTIFYed on canopy_changes here, on the coordinator, which commits after
-- the workers have prepared. One query an owner, each on that owner's
-- shard. Not 'push': the push outbox on Citus is claimed at the couriers'
-- interval until its claims per shard are built (push_covered reads the
-- owner's memberships, which a definer cannot after the gateway wrote that
-- shard in this transaction). Runs as
-- the caller (but for canopy.announce_owner's owners, which a definer
-- wrote): a zone they changed but may no longer see (they left its
-- share) is not announced, and its listeners read again at their
-- heartbeat. Nothing on one PostgreSQL, where the triggers NOTIFY.
CREATE OR REPLACE FUNCTION canopy.announce_changes(p_owner_ids bigint[], p_owner_names text[] DEFAULT '{}') RETURNS integer
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    stamp bigint;
    owners bigint[];
    defined bigint[];
    owner bigint;
    zone bigint;
    announced integer := 0;
BEGIN
    IF canopy.citus_node() = 'single' THEN
        RETURN 0;
    END IF;
    stamp := canopy.announcement_stamp();
    IF stamp IS NULL THEN
        RETURN 0;   -- nothing written on a worker
    END IF;
    -- The owners a definer of the coordinator wrote for the caller
    -- (canopy.announce_owner): read as the definer, since Citus refuses a
    -- second user on a shard this transaction wrote as one.
    defined := ARRAY(SELECT DISTINCT x::bigint FROM unnest(string_to_array(current_setting('canopy.announce_owners', true), ',')) x
                      WHERE x ~ '^[0-9]{1,18}$');
    owners := ARRAY(SELECT DISTINCT o FROM (
        SELECT unnest(coalesce(p_owner_ids, '{}')) AS o
        UNION ALL
        SELECT canopy.owner_id_named(n) FROM unnest(coalesce(p_owner_names, '{}')) n
    ) named WHERE o IS NOT NULL AND o <> ALL (defined));
    FOREACH owner IN ARRAY owners LOOP
        -- The zones changed, and those deleted: their row is gone, their
        -- owner's departure from them carries the stamp (migrations/0048;
        -- only the owner deletes a zone, and reads their own departures).
        FOR zone IN EXECUTE 'SELECT z.id FROM canopy.zones z WHERE z.owner_id = $1 AND z.announce_txn = $2
                             UNION
                             SELECT d.zone_id FROM canopy.zone_departures d
                              WHERE d.owner_id = $1 AND d.announce_txn = $2 AND d.scope = ''PRIVATE'' AND d.user_id = $1' USING owner, stamp LOOP
            PERFORM pg_notify('canopy_changes', zone || ' ' || owner);
            announced := announced + 1;
        END LOOP;
    END LOOP;
    FOREACH owner IN ARRAY defined LOOP
        FOR zone IN SELECT canopy.zones_stamped_here(owner) LOOP
            PERFORM pg_notify('canopy_changes', zone || ' ' || owner);
            announced := announced + 1;
        END LOOP;
    END LOOP;
    RETURN announced;
END
$$;

-- The database feed's clock of p_owner_id moved on by one, at commit (the
-- deferred triggers zones_clock and zone_departures_clock): the new
-- position. The row's lock is held until the commit ends, which orders
-- the owner's positions by commit (the header above). A row is made for
-- an owner's first change. On Citus this runs on the owner's shard.
CREATE OR REPLACE FUNCTION canopy.tick_owner_clock(p_owner_id bigint) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ticked bigint;
BEGIN
    INSERT INTO canopy.owner_clocks AS c (owner_id, position) VALUES (p_owner_id, 1)
    ON CONFLICT (owner_id) DO UPDATE SET position = c.position + 1
    RETURNING c.position INTO ticked;
    RETURN ticked;
END
$$;
REVOKE ALL ON FUNCTION canopy.tick_owner_clock(bigint) FROM PUBLIC, canopy_gateway;

-- The next change position of a zone, for a record, tombstone or
-- departure written in it: touches the zone first (its lock, its new
-- base) unless this transaction already did, then counts on from the
-- transaction's last position there. Above p_above too (a record moved in
-- from another zone keeps change tags that only grow: its next tag is
-- above its last, though that was another zone's position). Past 2^20
-- positions in one transaction, or below p_above, it takes a new base.
-- NULL when the zone no longer exists.
--
-- Called only by Canopy's own trigger functions and functions, which pin
-- search_path; records_before_write, on every record written, counts
-- inline the same way.
CREATE OR REPLACE FUNCTION canopy.draw_position(p_zone_id bigint, p_owner_id bigint, p_above bigint DEFAULT 0) RETURNS bigint
    LANGUAGE plpgsql
AS $$
DECLARE
    position bigint := nullif(current_setting('canopy.zone_position_' || p_zone_id, true), '')::bigint;
BEGIN
    IF position IS NULL THEN
        IF NOT canopy.touch_zone(p_zone_id, p_owner_id) THEN
            RETURN NULL;
        END IF;
        position := current_setting('canopy.zone_position_' || p_zone_id)::bigint;
    END IF;
    position := position + 1;
    IF position & 1048575 = 0 OR position <= p_above THEN
        UPDATE canopy.zones SET feed_base = greatest(feed_base + 1, (p_above >> 20) + 1)
         WHERE id = p_zone_id AND owner_id = p_owner_id
        RETURNING (feed_base << 20) + 1 INTO position;
    END IF;
    PERFORM set_config('canopy.zone_position_' || p_zone_id, position::text, true);
    RETURN position;
END
$$;

COMMENT ON FUNCTION canopy.draw_position(bigint, bigint, bigint) IS
    'The next change position of a zone in this transaction, above p_above (DECISIONS 165).';
REVOKE ALL ON FUNCTION canopy.draw_position(bigint, bigint, bigint) FROM PUBLIC, canopy_gateway;

-- Records that what p_user_id sees of a zone changed other than through
-- its records: they stopped seeing it (a departure) or, in SHARED scope,
-- started seeing more of it (accepting a share; see
-- participants_zone_change). Taken at a position of the zone's feed, under
-- its lock like a record write, so the user's zone tokens from before it
-- are CHANGE_TOKEN_EXPIRED and the zone is fetched again from null.
-- Nothing for a user being deleted.
DROP FUNCTION IF EXISTS canopy.record_departure(bigint, text, bigint);
CREATE OR REPLACE FUNCTION canopy.record_departure(p_user_id bigint, p_scope text, p_zone_id bigint, p_owner_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    zone_name text;
    owner_name text;
BEGIN
    -- One table's plain lookup at a time, then the row's values: on Citus
    -- this runs in a shard's task (the participants' trigger), where an
    -- INSERT … SELECT over the function's arguments cannot be planned.
    IF NOT canopy.touch_zone(p_zone_id, p_owner_id) THEN
        RETURN;
    END IF;
    PERFORM 1 FROM canopy.users WHERE id = p_user_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT u.record_name INTO owner_name FROM canopy.users u WHERE u.id = p_owner_id;
    IF NOT FOUND THEN
        RETURN;   -- the owner is being deleted
    END IF;
    SELECT z.name INTO zone_name FROM canopy.zones z WHERE z.id = p_zone_id AND z.owner_id = p_owner_id;
    INSERT INTO canopy.zone_departures (user_id, scope, zone_id, zone_name, owner_id, owner_record_name, change_seq)
    VALUES (p_user_id, p_scope, p_zone_id, zone_name, p_owner_id, owner_name, canopy.draw_position(p_zone_id, p_owner_id));
END
$$;

-- Removes at most p_batch tombstones and p_batch zone departures older
-- than p_retention and raises the horizons that make older tokens
-- CHANGE_TOKEN_EXPIRED. Returns how many rows went: the caller repeats
-- while it gets a full batch, one short transaction each (the gateway's
-- ChangeHistoryPurger, hourly; canopy serve --change-retention-days).
-- Zones are updated in id order, as writers never hold two zone locks.
CREATE OR REPLACE FUNCTION canopy.purge_change_history(p_retention interval, p_batch integer DEFAULT 5000) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cutoff timestamptz := now() - p_retention;
    tombstones bigint;
    departures bigint;
BEGIN
    IF p_retention < interval '0' OR p_batch < 1 THEN
        RAISE EXCEPTION 'the retention period and batch size cannot be negative' USING ERRCODE = 'CN004';
    END IF;
    WITH gone AS (
        DELETE FROM canopy.tombstones WHERE id IN (
            SELECT id FROM canopy.tombstones WHERE deleted_at < cutoff ORDER BY deleted_at LIMIT p_batch)
        RETURNING zone_id, change_seq
    ), per_zone AS (
        SELECT zone_id, max(change_seq) AS through, count(*) AS n FROM gone GROUP BY zone_id
    ), raised AS (
        UPDATE canopy.zones z SET tombstones_purged_through = greatest(z.tombstones_purged_through, per_zone.through)
          FROM (SELECT * FROM per_zone ORDER BY zone_id) per_zone WHERE z.id = per_zone.zone_id RETURNING 1
    )
    SELECT coalesce(sum(per_zone.n), 0) INTO tombstones FROM per_zone;
    WITH gone AS (
        DELETE FROM canopy.zone_departures WHERE id IN (
            SELECT id FROM canopy.zone_departures WHERE departed_at < cutoff ORDER BY departed_at LIMIT p_batch)
        RETURNING 1
    )
    SELECT count(*) INTO departures FROM gone;
    IF departures > 0 THEN
        UPDATE canopy.feed_state SET departures_purged_before = greatest(departures_purged_before, cutoff);
    END IF;
    RETURN greatest(tombstones, departures);
END
$$;

-- On Citus (the tombstones, departures and zones distributed by owner)
-- the same purge in steps Citus plans: the batch's ids read first, each
-- zone's highest purged position read from them, the rows deleted by id
-- (the ids are unique across the cluster), then each zone's horizon raised
-- by its owner and id, in id order. Citus refused the statements above
-- ("could not create distributed plan": a PL/pgSQL statement's variables,
-- and an UPDATE of the zones joined to the deleted rows by zone alone).
-- One PostgreSQL keeps the function above.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        CREATE OR REPLACE FUNCTION canopy.purge_change_history(p_retention interval, p_batch integer DEFAULT 5000) RETURNS bigint
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $body$
        DECLARE
            cutoff timestamptz := now() - p_retention;
            ids bigint[];
            owners bigint[];
            zones bigint[];
            throughs bigint[];
            tombstones bigint;
            departures bigint;
        BEGIN
            IF p_retention < interval '0' OR p_batch < 1 THEN
                RAISE EXCEPTION 'the retention period and batch size cannot be negative' USING ERRCODE = 'CN004';
            END IF;
            EXECUTE 'SELECT array_agg(t.id) FROM (SELECT id FROM canopy.tombstones WHERE deleted_at < $1 ORDER BY deleted_at LIMIT $2) t'
               INTO ids USING cutoff, p_batch;
            tombstones := coalesce(cardinality(ids), 0);
            IF tombstones > 0 THEN
                EXECUTE 'SELECT array_agg(z.owner_id ORDER BY z.zone_id), array_agg(z.zone_id ORDER BY z.zone_id),
                                array_agg(z.through ORDER BY z.zone_id)
                           FROM (SELECT owner_id, zone_id, max(change_seq) AS through FROM canopy.tombstones
                                  WHERE id = ANY($1) GROUP BY owner_id, zone_id) z'
                   INTO owners, zones, throughs USING ids;
                EXECUTE 'DELETE FROM canopy.tombstones WHERE id = ANY($1)' USING ids;
                FOR i IN 1 .. coalesce(cardinality(zones), 0) LOOP
                    EXECUTE 'UPDATE canopy.zones SET tombstones_purged_through = greatest(tombstones_purged_through, $3)
                              WHERE owner_id = $1 AND id = $2' USING owners[i], zones[i], throughs[i];
                END LOOP;
            END IF;
            EXECUTE 'SELECT array_agg(d.id) FROM (SELECT id FROM canopy.zone_departures WHERE departed_at < $1 ORDER BY departed_at LIMIT $2) d'
               INTO ids USING cutoff, p_batch;
            departures := coalesce(cardinality(ids), 0);
            IF departures > 0 THEN
                EXECUTE 'DELETE FROM canopy.zone_departures WHERE id = ANY($1)' USING ids;
                EXECUTE 'UPDATE canopy.feed_state SET departures_purged_before = greatest(departures_purged_before, $1)' USING cutoff;
            END IF;
            RETURN greatest(tombstones, departures);
        END
        $body$;
    END IF;
END
$$;

-- modifyRecords takes its zone's lock before any record's: otherwise a
-- batch that updated A and then waits for the zone (held by a batch that
-- updated B) while that batch waits for A deadlocks. Only for callers who
-- may write to the zone (a READ_ONLY participant cannot hold writers up);
-- always true, so the write goes on and row-level security decides.
-- Given the zone's owner, as zone_feed_position (DECISIONS 168).
CREATE OR REPLACE FUNCTION canopy.lock_zone_for_write(p_zone_id bigint, p_owner_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM canopy.memberships m
                WHERE m.user_id = canopy.current_user_id() AND m.zone_id = p_zone_id AND m.owner_id = p_owner_id AND m.can_write)
       OR (canopy.current_user_id() IS NOT NULL AND p_owner_id = 0
           AND EXISTS (SELECT 1 FROM canopy.zones z WHERE z.id = p_zone_id AND z.owner_id = 0)) THEN
        PERFORM 1 FROM canopy.zones WHERE id = p_zone_id AND owner_id = p_owner_id FOR NO KEY UPDATE;
    END IF;
    RETURN true;
END
$$;

-- The one-argument form, for a gateway older than the owner's argument
-- until it is restarted (one PostgreSQL only).
CREATE OR REPLACE FUNCTION canopy.lock_zone_for_write(p_zone_id bigint) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT canopy.lock_zone_for_write(p_zone_id, (SELECT z.owner_id FROM canopy.zones z WHERE z.id = p_zone_id))
$$;

-- The highest change position of a zone the caller can see, over its
-- records and tombstones (whoever may read them) and the caller's own
-- departures: where a sync from null starts reporting deletions, so a new
-- participant learns nothing of what was deleted before they could see it.
-- Given the zone's owner (the `zone` CTE's owner_id), every table is read
-- by it: on Citus the function runs inside its statement's one-shard task,
-- where only that owner's shards are local (DECISIONS 168). PL/pgSQL, not
-- SQL: Citus cannot plan a SQL function's parameters, and PL/pgSQL's plans
-- follow plan_cache_mode (canopy.act_as makes them for the values).
CREATE OR REPLACE FUNCTION canopy.zone_feed_position(p_zone_id bigint, p_owner_id bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT greatest(
        (SELECT max(r.change_seq) FROM canopy.records r WHERE r.zone_id = z.id AND r.owner_id = p_owner_id),
        (SELECT max(t.change_seq) FROM canopy.tombstones t WHERE t.zone_id = z.id AND t.owner_id = p_owner_id),
        (SELECT max(d.change_seq) FROM canopy.zone_departures d
          WHERE d.zone_id = z.id AND d.owner_id = p_owner_id AND d.user_id = canopy.current_user_id()),
        z.access_changed_seq,   -- the public zone's last change of grants (0 elsewhere)
        -- Never below what the purge removed: a zone whose newest event was a
        -- purged deletion would otherwise start every sync from null below
        -- tombstones_purged_through, and its next page would always be
        -- CHANGE_TOKEN_EXPIRED (found in issue 36's review).
        z.tombstones_purged_through,
        0)
      FROM canopy.zones z
     WHERE z.id = p_zone_id AND z.owner_id = p_owner_id
       AND (z.owner_id = 0   -- the public zone (migrations/0025, 0038): everyone's feed
            OR EXISTS (SELECT 1 FROM canopy.memberships m
                        WHERE m.user_id = canopy.current_user_id() AND m.zone_id = z.id AND m.owner_id = p_owner_id)));
END
$$;

-- The one-argument form, for a gateway older than the owner's argument
-- until it is restarted (one PostgreSQL only).
CREATE OR REPLACE FUNCTION canopy.zone_feed_position(p_zone_id bigint) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT canopy.zone_feed_position(p_zone_id, (SELECT z.owner_id FROM canopy.zones z WHERE z.id = p_zone_id))
$$;

-- Where to cut a zone's records at or below p_through (a feed position,
-- zone_feed_position's answer in the same statement) into ranges of nearly
-- equal size, for a first sync read in parallel (`zoneRanges`, issue 51;
-- docs/CHANGE_FEEDS.md, "A first sync in ranges"): up to p_count - 1 change
-- positions, ascending; range i is (cut[i-1], cut[i]] with cut[0] = 0 and
-- cut[last] = p_through. With p_minimum > 0 (the caller's own zone) fewer
-- ranges are cut, at least p_minimum records each (and always one); with 0
-- (a participant's or the public zone) exactly p_count ranges, some perhaps
-- empty, so their number tells nothing of the zone's size. Both walks are
-- over records_zone_change_idx (a count, then hops of `step` entries). NULL
-- for a zone the caller is not a member of, as zone_feed_position.
--
-- Since DECISIONS 171 (supersedes the 4-argument version, dropped here):
-- p_owner_id, the zone's owner (NULL, from an older gateway: the zone's
-- row says). On Citus each statement names it, so it runs on the owner's
-- shard; on one PostgreSQL the walks leave it out, which keeps them
-- index-only scans of (zone_id, change_seq) (the zone's id already
-- decides its owner). The text differs by engine, never by value: every
-- value is bound.
DROP FUNCTION IF EXISTS canopy.zone_range_cuts(bigint, bigint, integer, integer);
CREATE OR REPLACE FUNCTION canopy.zone_range_cuts(
    p_zone_id bigint, p_through bigint, p_count integer, p_minimum integer, p_owner_id bigint DEFAULT NULL
) RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_owner bigint := p_owner_id;
    v_by_owner text := CASE WHEN canopy.citus_node() = 'single' THEN '' ELSE 'r.owner_id = $3 AND ' END;
    v_total bigint;
    v_ranges integer;
    v_step bigint;
    v_cut bigint := 0;
    v_next bigint;
    v_cuts bigint[] := '{}';
BEGIN
    IF p_count IS NULL OR p_count < 1 OR p_count > 64 THEN
        RAISE EXCEPTION 'zone_range_cuts: count must be 1-64, not %', p_count USING ERRCODE = '22023';
    END IF;
    IF v_owner IS NULL THEN
        SELECT z.owner_id INTO v_owner FROM canopy.zones z WHERE z.id = p_zone_id;
    END IF;
    IF v_owner IS NULL OR NOT (v_owner = 0 OR canopy.may_see_zone(v_owner, p_zone_id)) THEN
        RETURN NULL;
    END IF;
    EXECUTE 'SELECT count(*) FROM canopy.records r WHERE ' || v_by_owner || 'r.zone_id = $1 AND r.change_seq <= $2'
       INTO v_total USING p_zone_id, p_through, v_owner;
    v_ranges := p_count;
    IF p_minimum > 0 THEN
        v_ranges := least(p_count, greatest(1, ceil(v_total::numeric / p_minimum)::integer));
    END IF;
    v_step := greatest(ceil(v_total::numeric / v_ranges)::bigint, 1);
    FOR k IN 1 .. v_ranges - 1 LOOP
        v_next := NULL;
        IF v_cut < p_through THEN
            EXECUTE 'SELECT r.change_seq FROM canopy.records r WHERE ' || v_by_owner
                    || 'r.zone_id = $1 AND r.change_seq > $4 AND r.change_seq <= $2 ORDER BY r.change_seq OFFSET $5 - 1 LIMIT 1'
               INTO v_next USING p_zone_id, p_through, v_owner, v_cut, v_step;
        END IF;
        v_cut := coalesce(v_next, p_through);
        v_cuts := v_cuts || v_cut;
    END LOOP;
    RETURN v_cuts;
END
$$;

-- Where this server's data stands in the write-ahead log, for
-- read-your-writes across replicas (docs/DEPLOYMENT.md). On the primary,
-- the WAL insert position: at or past the commit record of everything a
-- snapshot can see. On a standby, what it has replayed: evaluated after the
-- statement's snapshot was taken, so at or past what that snapshot shows. A
-- reader handed this position reads next only from a server that has
-- replayed it, so it never sees less than it saw.
CREATE OR REPLACE FUNCTION canopy.read_position() RETURNS text
    LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text
$$;

REVOKE ALL ON FUNCTION canopy.touch_zone(bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.announce_changes(bigint[], text[]) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.announce_changes(bigint[], text[]) TO canopy_gateway;
REVOKE ALL ON FUNCTION canopy.record_departure(bigint, text, bigint, bigint) FROM PUBLIC, canopy_gateway;
-- Which gateway purges (issue 19): every gateway's timer asks, and only the
-- first to ask in 90% of an interval is told yes, so the purge runs about
-- once an interval however many gateways share the database. The row lock
-- of the one feed_state row orders concurrent claims: the second re-reads
-- the claim the first wrote and is told no.
--
-- PL/pgSQL by EXECUTE … USING (DECISIONS 178): Citus cannot plan a SQL
-- function's parameters over feed_state, a reference table there.
CREATE OR REPLACE FUNCTION canopy.claim_history_purge(p_every interval) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    claimed bigint;
BEGIN
    EXECUTE 'UPDATE canopy.feed_state SET history_purge_claimed_at = now()
              WHERE history_purge_claimed_at IS NULL OR history_purge_claimed_at <= now() - $1 * 0.9' USING p_every;
    GET DIAGNOSTICS claimed = ROW_COUNT;
    RETURN claimed > 0;
END
$$;

REVOKE ALL ON FUNCTION canopy.purge_change_history(interval, integer) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.claim_history_purge(interval) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.lock_zone_for_write(bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.lock_zone_for_write(bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.zone_feed_position(bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.zone_feed_position(bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.zone_range_cuts(bigint, bigint, integer, integer, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.read_position() FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.purge_change_history(interval, integer) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.claim_history_purge(interval) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.lock_zone_for_write(bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.lock_zone_for_write(bigint, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.zone_feed_position(bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.zone_feed_position(bigint, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.zone_range_cuts(bigint, bigint, integer, integer, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.read_position() TO canopy_gateway;
