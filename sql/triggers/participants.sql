-- Triggers on canopy.participants: participants_count,
-- participants_guard_self_update, participants_zone_change.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0003, 0004 and 0007.

SET LOCAL ROLE canopy_owner;

-- Participants: at most 100 per share besides the owner and those REMOVED,
-- counted on the share row (whose lock serialises concurrent additions).
CREATE OR REPLACE FUNCTION canopy.participants_count() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    delta integer := 0;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.role <> 'OWNER' AND OLD.status <> 'REMOVED' THEN
        delta := delta - 1;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.role <> 'OWNER' AND NEW.status <> 'REMOVED' THEN
        delta := delta + 1;
    END IF;
    IF delta <> 0 THEN
        UPDATE canopy.shares SET participant_count = participant_count + delta
         WHERE id = coalesce(NEW.share_id, OLD.share_id) AND owner_id = coalesce(NEW.owner_id, OLD.owner_id);
    END IF;
    RETURN NULL;
EXCEPTION WHEN check_violation THEN
    RAISE EXCEPTION 'a share has at most 100 participants' USING ERRCODE = 'CN003';
END
$$;

DROP TRIGGER IF EXISTS participants_count ON canopy.participants;
CREATE TRIGGER participants_count AFTER INSERT OR UPDATE OR DELETE ON canopy.participants
    FOR EACH ROW EXECUTE FUNCTION canopy.participants_count();

-- A participant who is neither the zone owner nor an accepted administrator
-- of the share may change their own row only to leave (status REMOVED).
-- Runs as the caller, so it sees what the caller's policies let it see.
CREATE OR REPLACE FUNCTION canopy.participants_guard_self_update() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_user <> 'canopy_gateway' THEN
        RETURN NEW;
    END IF;
    -- The share's owner (the row's owner_id is the share's), or one of its
    -- administrators: asked of this share alone (canopy.caller_in_share),
    -- which Citus answers on the share's shard; the caller's every share
    -- (owned_share_ids, admin_share_ids) it cannot gather there.
    IF NEW.owner_id = canopy.current_user_id() OR canopy.caller_in_share(NEW.owner_id, NEW.share_id, 'admin') THEN
        RETURN NEW;
    END IF;
    IF NEW.share_id <> OLD.share_id OR NEW.user_id IS DISTINCT FROM OLD.user_id
       OR NEW.email IS DISTINCT FROM OLD.email OR NEW.phone IS DISTINCT FROM OLD.phone
       OR NEW.role <> OLD.role OR NEW.permission <> OLD.permission OR NEW.status <> 'REMOVED' THEN
        RAISE EXCEPTION 'a participant may only leave a share' USING ERRCODE = 'CN005';
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS participants_guard_self_update ON canopy.participants;
CREATE TRIGGER participants_guard_self_update BEFORE UPDATE ON canopy.participants
    FOR EACH ROW EXECUTE FUNCTION canopy.participants_guard_self_update();

-- A participant added, changed or removed changes the share's zone; one
-- who was ACCEPTED and is no longer (removed, left, deleted) departs; one
-- who becomes ACCEPTED sees more of the zone than their zone tokens know
-- (another record-rooted share's records, already at old positions), which
-- is recorded the same way. Named to fire after participants_count (trigger
-- order is alphabetical), so every path locks the share row before the
-- zone row, as accept_share and saveShare do.
CREATE OR REPLACE FUNCTION canopy.participants_zone_change() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    zone bigint;
    was_in boolean := TG_OP <> 'INSERT' AND OLD.status = 'ACCEPTED' AND OLD.role <> 'OWNER' AND OLD.user_id IS NOT NULL;
    is_in boolean := TG_OP <> 'DELETE' AND NEW.status = 'ACCEPTED' AND NEW.role <> 'OWNER' AND NEW.user_id IS NOT NULL;
    -- Plain variables: Citus plans a lookup over them in a shard's task,
    -- not one over expressions of NEW and OLD.
    share bigint := coalesce(NEW.share_id, OLD.share_id);
    owner bigint := coalesce(NEW.owner_id, OLD.owner_id);
BEGIN
    SELECT s.zone_id INTO zone FROM canopy.shares s WHERE s.id = share AND s.owner_id = owner;
    IF zone IS NULL THEN
        RETURN NULL;   -- the share is being deleted: shares_before_delete did this
    END IF;
    PERFORM canopy.touch_zone(zone, owner);
    IF was_in AND (NOT is_in OR NEW.user_id IS DISTINCT FROM OLD.user_id) THEN
        PERFORM canopy.record_departure(OLD.user_id, 'SHARED', zone, OLD.owner_id);
    END IF;
    IF is_in AND (NOT was_in OR NEW.user_id IS DISTINCT FROM OLD.user_id) THEN
        PERFORM canopy.record_departure(NEW.user_id, 'SHARED', zone, NEW.owner_id);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS participants_zone_change ON canopy.participants;
CREATE TRIGGER participants_zone_change AFTER INSERT OR UPDATE OR DELETE ON canopy.participants
    FOR EACH ROW EXECUTE FUNCTION canopy.participants_zone_change();

REVOKE ALL ON FUNCTION canopy.participants_count() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.participants_guard_self_update() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.participants_zone_change() FROM PUBLIC, canopy_gateway;
