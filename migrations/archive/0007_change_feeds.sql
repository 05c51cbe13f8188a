-- Change feeds (API.md §7): zoneChanges and databaseChanges, exact under
-- concurrent writers, and NOTIFY for live subscriptions.
--
-- Two orders, each proved where it is defined:
--
-- * Within a zone, change positions (canopy.change_seq) follow commit
--   order. Every write to a zone first takes the zone's row lock (through
--   canopy.touch_zone) and only then draws its position, and keeps the lock
--   until it commits. Two transactions writing one zone therefore hold the
--   lock one after the other, and all positions of the first are drawn (and
--   committed or rolled back) before the second draws any. A reader whose
--   snapshot shows position p of a zone also shows every committed position
--   below p, so "positions after the last one delivered" never skips
--   (docs/CHANGE_FEEDS.md has the argument in full). The sequence must keep
--   CACHE 1: cached values would be drawn out of time order.
--
-- * Across zones (databaseChanges), there is no such order, so the token is
--   a snapshot: each zone row remembers the id of the last transaction that
--   changed it (zones.changed_xid, written under the same lock), a database
--   token holds the snapshot (pg_current_snapshot()) its pass was read
--   under, and the next pass reports every zone whose changed_xid that
--   snapshot did not see.
SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.zones
    ADD COLUMN changed_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    ADD COLUMN tombstones_purged_through bigint NOT NULL DEFAULT 0;
CREATE INDEX zones_owner_changed_idx ON canopy.zones (owner_id, changed_xid);
COMMENT ON COLUMN canopy.zones.changed_xid IS 'Transaction id of the last transaction that changed the zone''s records, shares or participants (databaseChanges); written by canopy.touch_zone under the zone''s row lock.';
COMMENT ON COLUMN canopy.zones.tombstones_purged_through IS 'Highest change position of a tombstone purged from this zone; a zone token below it is CHANGE_TOKEN_EXPIRED.';

ALTER TABLE canopy.tombstones
    ADD COLUMN kind text NOT NULL DEFAULT 'deleted' CONSTRAINT tombstones_kind CHECK (kind IN ('deleted', 'left_share'));
COMMENT ON COLUMN canopy.tombstones.kind IS 'deleted: the record was deleted. left_share: the record moved out of the record-rooted share in share_id (a participant of that share sees it as deleted).';

-- Changes in what a user sees of a zone other than through its records:
-- the zone deleted (its owner, PRIVATE), no longer shared with them
-- (SHARED: share deleted, removed, left), or a share in it accepted (SHARED:
-- they see more of it). Rows are per user and written by trigger only.
CREATE TABLE canopy.zone_departures (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id            bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    scope              text NOT NULL CHECK (scope IN ('PRIVATE', 'SHARED')),
    zone_id            bigint NOT NULL,
    zone_name          text NOT NULL,
    owner_id           bigint NOT NULL,
    owner_record_name  text NOT NULL,
    change_xid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    change_seq         bigint NOT NULL,
    departed_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX zone_departures_user_idx ON canopy.zone_departures (user_id, scope, change_xid);
CREATE INDEX zone_departures_zone_idx ON canopy.zone_departures (zone_id, user_id, change_seq);
CREATE INDEX zone_departures_departed_at_idx ON canopy.zone_departures (departed_at);
COMMENT ON TABLE canopy.zone_departures IS 'Changes in what a user sees of a zone other than through its records: stopped seeing it (databaseChanges.deletedZones) or, in SHARED scope, accepted a share in it. Either expires the user''s older tokens for the zone. Visible to that user only; purged after the retention period.';
COMMENT ON COLUMN canopy.zone_departures.user_id IS 'Who stopped seeing the zone.';
COMMENT ON COLUMN canopy.zone_departures.scope IS 'PRIVATE: the owner deleted the zone. SHARED: a participant lost access (share deleted, removed, left, zone deleted) or accepted a share in it.';
COMMENT ON COLUMN canopy.zone_departures.zone_id IS 'The zone (which may no longer exist).';
COMMENT ON COLUMN canopy.zone_departures.zone_name IS 'Its zoneName, kept because the zone may be gone.';
COMMENT ON COLUMN canopy.zone_departures.owner_id IS 'Its owner.';
COMMENT ON COLUMN canopy.zone_departures.owner_record_name IS 'Its owner''s userRecordName (ownerName).';
COMMENT ON COLUMN canopy.zone_departures.change_xid IS 'The departing transaction, for database tokens.';
COMMENT ON COLUMN canopy.zone_departures.change_seq IS 'A position in the zone''s feed: a zone token from before it no longer describes what the user sees (CHANGE_TOKEN_EXPIRED).';
COMMENT ON COLUMN canopy.zone_departures.departed_at IS 'When; for the retention period.';

-- Cluster-wide state of the feeds.
CREATE TABLE canopy.feed_state (
    singleton                   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    departures_purged_before    timestamptz
);
INSERT INTO canopy.feed_state DEFAULT VALUES;
COMMENT ON TABLE canopy.feed_state IS 'One row: what the purge has removed from the feeds.';
COMMENT ON COLUMN canopy.feed_state.singleton IS 'Always true: the table has one row.';
COMMENT ON COLUMN canopy.feed_state.departures_purged_before IS 'Zone departures from before this time have been purged; a database token read before it is CHANGE_TOKEN_EXPIRED. NULL: none purged yet.';

ALTER TABLE canopy.zone_departures ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.zone_departures FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.feed_state ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.feed_state FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.zone_departures TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY canopy_owner_all ON canopy.feed_state TO canopy_owner USING (true) WITH CHECK (true);
CREATE POLICY zone_departures_select ON canopy.zone_departures FOR SELECT TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));
CREATE POLICY feed_state_select ON canopy.feed_state FOR SELECT TO canopy_gateway USING (true);
GRANT SELECT ON canopy.zone_departures, canopy.feed_state TO canopy_gateway;

-- Marks the zone changed by the current transaction and takes its row lock
-- (held to commit), which orders the zone's change positions; the first
-- time in a transaction it also NOTIFYs canopy_changes with
-- '<zone id> <owner id>' for live subscriptions (delivered at commit, and
-- not at all on rollback). False when the zone no longer exists.
CREATE FUNCTION canopy.touch_zone(p_zone_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint;
    touched boolean;
BEGIN
    -- One lookup on the common path (the zone already touched by this
    -- transaction, every record of a batch after the first): lock and check.
    SELECT owner_id, changed_xid = pg_current_xact_id() INTO owner, touched
      FROM canopy.zones WHERE id = p_zone_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF NOT touched THEN
        UPDATE canopy.zones SET changed_xid = pg_current_xact_id() WHERE id = p_zone_id;
        PERFORM pg_notify('canopy_changes', p_zone_id || ' ' || owner);
    END IF;
    RETURN true;
END
$$;

-- records_before_write (0003) with the zone touched rather than only
-- locked, and a left_share tombstone when a record leaves a record-rooted
-- share, so that share's participants see it go.
CREATE OR REPLACE FUNCTION canopy.records_before_write() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    root_share bigint;
    parent_share bigint;
    ancestor text;
    content_changed boolean;
BEGIN
    IF TG_OP = 'UPDATE' AND (NEW.zone_id <> OLD.zone_id OR NEW.record_name <> OLD.record_name) THEN
        RAISE EXCEPTION 'a record''s zone and recordName never change' USING ERRCODE = 'CN004';
    END IF;

    -- Change positions within a zone follow commit order: take them under the
    -- zone's row lock, which a concurrent writer to the same zone waits for.
    PERFORM canopy.touch_zone(NEW.zone_id);
    NEW.change_seq := nextval('canopy.change_seq');

    content_changed := TG_OP = 'INSERT'
        OR NEW.fields IS DISTINCT FROM OLD.fields
        OR NEW.record_type IS DISTINCT FROM OLD.record_type
        OR NEW.parent_name IS DISTINCT FROM OLD.parent_name
        OR NEW.share_id IS NOT DISTINCT FROM OLD.share_id;   -- a save of identical content is still a save
    IF content_changed THEN
        NEW.change_tag := to_hex(NEW.change_seq);
        NEW.modified_at := now();
        NEW.modified_by := canopy.current_user_id();
        IF TG_OP = 'INSERT' THEN
            NEW.created_at := NEW.modified_at;
            NEW.created_by := NEW.modified_by;
        ELSE
            NEW.created_at := OLD.created_at;
            NEW.created_by := OLD.created_by;
        END IF;
    END IF;

    IF TG_OP = 'INSERT' OR NEW.parent_name IS DISTINCT FROM OLD.parent_name THEN
        IF NEW.parent_name IS NOT NULL THEN
            -- No cycles: walk up from the new parent (writes only, never reads).
            WITH RECURSIVE up (name, depth) AS (
                SELECT NEW.parent_name, 1
                UNION
                SELECT r.parent_name, up.depth + 1
                  FROM canopy.records r JOIN up ON r.zone_id = NEW.zone_id AND r.record_name = up.name
                 WHERE r.parent_name IS NOT NULL AND up.depth < 10000
            )
            SELECT name INTO ancestor FROM up WHERE name = NEW.record_name LIMIT 1;
            IF ancestor IS NOT NULL THEN
                RAISE EXCEPTION 'parent % of record % makes a cycle', NEW.parent_name, NEW.record_name
                    USING ERRCODE = 'CN001';
            END IF;
        END IF;

        SELECT s.id INTO root_share FROM canopy.shares s WHERE s.root_record_id = NEW.id;
        SELECT r.share_id INTO parent_share FROM canopy.records r
         WHERE r.zone_id = NEW.zone_id AND r.record_name = NEW.parent_name;
        IF root_share IS NOT NULL THEN
            IF parent_share IS NOT NULL AND parent_share <> root_share THEN
                RAISE EXCEPTION 'record % is the root of a share and cannot be moved into another share', NEW.record_name
                    USING ERRCODE = 'CN002';
            END IF;
            NEW.share_id := root_share;
        ELSE
            NEW.share_id := parent_share;
        END IF;
    END IF;

    IF TG_OP = 'UPDATE' AND OLD.share_id IS NOT NULL AND NEW.share_id IS DISTINCT FROM OLD.share_id THEN
        INSERT INTO canopy.tombstones (zone_id, record_name, record_type, share_id, change_seq, deleted_by, kind)
        VALUES (OLD.zone_id, OLD.record_name, OLD.record_type, OLD.share_id, NEW.change_seq, canopy.current_user_id(), 'left_share');
    END IF;
    RETURN NEW;
END
$$;

-- records_after_write (0003) with the zone touched on delete.
CREATE OR REPLACE FUNCTION canopy.records_after_write() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    seq bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Nothing to record when the whole zone goes (ON DELETE CASCADE).
        IF canopy.touch_zone(OLD.zone_id) THEN
            seq := nextval('canopy.change_seq');
            INSERT INTO canopy.tombstones (zone_id, record_name, record_type, share_id, change_seq, deleted_by)
            VALUES (OLD.zone_id, OLD.record_name, OLD.record_type, OLD.share_id, seq, canopy.current_user_id());
            -- Children keep their dangling parent_name but leave the share.
            PERFORM canopy.propagate_share(OLD.zone_id, OLD.record_name, NULL);
        END IF;
        RETURN NULL;
    END IF;
    PERFORM canopy.propagate_share(NEW.zone_id, NEW.record_name, NEW.share_id);
    RETURN NULL;
END
$$;

-- Records that what p_user_id sees of a zone changed other than through
-- its records: they stopped seeing it (a departure) or, in SHARED scope,
-- started seeing more of it (accepting a share; see
-- participants_zone_change). Taken at a position of the zone's feed, under
-- its lock like a record write, so the user's zone tokens from before it
-- are CHANGE_TOKEN_EXPIRED and the zone is fetched again from null.
-- Nothing for a user being deleted.
CREATE FUNCTION canopy.record_departure(p_user_id bigint, p_scope text, p_zone_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF canopy.touch_zone(p_zone_id) AND EXISTS (SELECT 1 FROM canopy.users WHERE id = p_user_id) THEN
        INSERT INTO canopy.zone_departures (user_id, scope, zone_id, zone_name, owner_id, owner_record_name, change_seq)
        SELECT p_user_id, p_scope, z.id, z.name, z.owner_id, u.record_name, nextval('canopy.change_seq')
          FROM canopy.zones z JOIN canopy.users u ON u.id = z.owner_id
         WHERE z.id = p_zone_id;
    END IF;
END
$$;

-- A zone being deleted: its owner (PRIVATE) and every accepted participant
-- of its shares (SHARED) stop seeing it.
CREATE FUNCTION canopy.zones_before_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The DELETE holds the zone's row lock already; touching the row being
    -- deleted is not allowed, so write the departures here.
    INSERT INTO canopy.zone_departures (user_id, scope, zone_id, zone_name, owner_id, owner_record_name, change_seq)
    SELECT m.user_id, m.scope, OLD.id, OLD.name, OLD.owner_id, u.record_name, nextval('canopy.change_seq')
      FROM (SELECT OLD.owner_id AS user_id, 'PRIVATE' AS scope
            UNION
            SELECT p.user_id, 'SHARED' FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id
             WHERE s.zone_id = OLD.id AND p.status = 'ACCEPTED' AND p.role <> 'OWNER' AND p.user_id IS NOT NULL) m
      JOIN canopy.users u ON u.id = OLD.owner_id          -- none when the owner is being deleted
     WHERE EXISTS (SELECT 1 FROM canopy.users gone WHERE gone.id = m.user_id);
    PERFORM pg_notify('canopy_changes', OLD.id || ' ' || OLD.owner_id);
    RETURN OLD;
END
$$;
CREATE TRIGGER zones_before_delete BEFORE DELETE ON canopy.zones
    FOR EACH ROW EXECUTE FUNCTION canopy.zones_before_delete();

-- A zone created: its owner's databaseChanged subscriptions are told
-- (changed_xid is the creating transaction's, by default).
CREATE FUNCTION canopy.zones_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_notify('canopy_changes', NEW.id || ' ' || NEW.owner_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER zones_after_insert AFTER INSERT ON canopy.zones
    FOR EACH ROW EXECUTE FUNCTION canopy.zones_after_insert();

-- A share being deleted: its accepted participants stop seeing the zone
-- (through it). When the whole zone goes, zones_before_delete did this and
-- the zone is no longer there to touch.
CREATE FUNCTION canopy.shares_before_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM canopy.touch_zone(OLD.zone_id);   -- the owner's feed: the share changed
    PERFORM canopy.record_departure(p.user_id, 'SHARED', OLD.zone_id)
       FROM canopy.participants p
      WHERE p.share_id = OLD.id AND p.status = 'ACCEPTED' AND p.role <> 'OWNER' AND p.user_id IS NOT NULL;
    RETURN OLD;
END
$$;
CREATE TRIGGER shares_before_delete BEFORE DELETE ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_before_delete();

-- A share created or changed (title, public permission, participant count)
-- changes its zone.
CREATE FUNCTION canopy.shares_touch_zone() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM canopy.touch_zone(NEW.zone_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER shares_touch_zone AFTER INSERT OR UPDATE ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_touch_zone();

-- A participant added, changed or removed changes the share's zone; one
-- who was ACCEPTED and is no longer (removed, left, deleted) departs; one
-- who becomes ACCEPTED sees more of the zone than their zone tokens know
-- (another record-rooted share's records, already at old positions), which
-- is recorded the same way. Named to fire after participants_count (trigger
-- order is alphabetical), so every path locks the share row before the
-- zone row, as accept_share and saveShare do.
CREATE FUNCTION canopy.participants_zone_change() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    zone bigint;
    was_in boolean := TG_OP <> 'INSERT' AND OLD.status = 'ACCEPTED' AND OLD.role <> 'OWNER' AND OLD.user_id IS NOT NULL;
    is_in boolean := TG_OP <> 'DELETE' AND NEW.status = 'ACCEPTED' AND NEW.role <> 'OWNER' AND NEW.user_id IS NOT NULL;
BEGIN
    SELECT s.zone_id INTO zone FROM canopy.shares s WHERE s.id = coalesce(NEW.share_id, OLD.share_id);
    IF zone IS NULL THEN
        RETURN NULL;   -- the share is being deleted: shares_before_delete did this
    END IF;
    PERFORM canopy.touch_zone(zone);
    IF was_in AND (NOT is_in OR NEW.user_id IS DISTINCT FROM OLD.user_id) THEN
        PERFORM canopy.record_departure(OLD.user_id, 'SHARED', zone);
    END IF;
    IF is_in AND (NOT was_in OR NEW.user_id IS DISTINCT FROM OLD.user_id) THEN
        PERFORM canopy.record_departure(NEW.user_id, 'SHARED', zone);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER participants_zone_change AFTER INSERT OR UPDATE OR DELETE ON canopy.participants
    FOR EACH ROW EXECUTE FUNCTION canopy.participants_zone_change();

-- accept_share (0006) locked the share FOR UPDATE, which waits for (and
-- deadlocks with) a record write holding the zone lock whose foreign key
-- check takes FOR KEY SHARE on the share. FOR NO KEY UPDATE orders accepts
-- just as well without that conflict.
CREATE OR REPLACE FUNCTION canopy.accept_share(p_token text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller canopy.users;
    target canopy.shares;
    invitation canopy.participants;
BEGIN
    SELECT * INTO caller FROM canopy.users WHERE id = canopy.current_user_id();
    -- The share row's lock orders concurrent accepts of one share.
    SELECT * INTO target FROM canopy.shares WHERE url_token = p_token FOR NO KEY UPDATE;
    IF caller.id IS NULL OR target.id IS NULL THEN
        RAISE EXCEPTION 'no share at this URL that you may open' USING ERRCODE = 'CN005';
    END IF;
    SELECT * INTO invitation FROM canopy.participants p
     WHERE p.share_id = target.id
       AND (p.user_id = caller.id
            OR (p.user_id IS NULL AND ((p.email IS NOT NULL AND p.email = caller.email)
                                        OR (p.phone IS NOT NULL AND p.phone = caller.phone))))
     ORDER BY (p.user_id IS NOT NULL) DESC, p.id
     LIMIT 1 FOR UPDATE;
    IF invitation.id IS NOT NULL THEN
        IF invitation.status = 'REMOVED' THEN
            RAISE EXCEPTION 'you were removed from this share; the owner must add you again' USING ERRCODE = 'CN005';
        ELSIF invitation.status = 'PENDING' THEN
            UPDATE canopy.participants SET status = 'ACCEPTED', user_id = caller.id, accepted_at = now()
             WHERE id = invitation.id;
        END IF;
    ELSIF target.public_permission <> 'NONE' THEN
        INSERT INTO canopy.participants (share_id, user_id, role, permission, status, accepted_at)
        VALUES (target.id, caller.id, 'PUBLIC_USER', target.public_permission, 'ACCEPTED', now());
    ELSE
        RAISE EXCEPTION 'no share at this URL that you may open' USING ERRCODE = 'CN005';
    END IF;
    RETURN target.id;
END
$$;

-- Removes at most p_batch tombstones and p_batch zone departures older
-- than p_retention and raises the horizons that make older tokens
-- CHANGE_TOKEN_EXPIRED. Returns how many rows went: the caller repeats
-- while it gets a full batch, one short transaction each (the gateway's
-- ChangeHistoryPurger, hourly; canopy serve --change-retention-days).
-- Zones are updated in id order, as writers never hold two zone locks.
CREATE FUNCTION canopy.purge_change_history(p_retention interval, p_batch integer DEFAULT 5000) RETURNS bigint
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

-- modifyRecords takes its zone's lock before any record's: otherwise a
-- batch that updated A and then waits for the zone (held by a batch that
-- updated B) while that batch waits for A deadlocks. Only for callers who
-- may write to the zone (a READ_ONLY participant cannot hold writers up);
-- always true, so the write goes on and row-level security decides.
CREATE FUNCTION canopy.lock_zone_for_write(p_zone_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM canopy.zones z
                WHERE z.id = p_zone_id
                  AND (z.owner_id = canopy.current_user_id()
                       OR z.id = ANY (canopy.member_zone_ids(true))
                       OR EXISTS (SELECT 1 FROM canopy.shares s
                                   WHERE s.zone_id = z.id AND s.id = ANY (canopy.member_record_share_ids(true))))) THEN
        PERFORM 1 FROM canopy.zones WHERE id = p_zone_id FOR NO KEY UPDATE;
    END IF;
    RETURN true;
END
$$;

-- The highest change position of a zone the caller can see, over its
-- records and tombstones (whoever may read them) and the caller's own
-- departures: where a sync from null starts reporting deletions, so a new
-- participant learns nothing of what was deleted before they could see it.
CREATE FUNCTION canopy.zone_feed_position(p_zone_id bigint) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT greatest(
        (SELECT max(r.change_seq) FROM canopy.records r WHERE r.zone_id = z.id),
        (SELECT max(t.change_seq) FROM canopy.tombstones t WHERE t.zone_id = z.id),
        (SELECT max(d.change_seq) FROM canopy.zone_departures d WHERE d.zone_id = z.id AND d.user_id = canopy.current_user_id()),
        0)
      FROM canopy.zones z
     WHERE z.id = p_zone_id
       AND (z.owner_id = canopy.current_user_id() OR z.id = ANY (canopy.member_any_zone_ids()))
$$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA canopy FROM PUBLIC;
GRANT EXECUTE ON FUNCTION canopy.purge_change_history(interval, integer), canopy.zone_feed_position(bigint),
    canopy.lock_zone_for_write(bigint) TO canopy_gateway;
