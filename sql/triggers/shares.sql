-- Triggers on canopy.shares: shares_before_insert, shares_after_insert,
-- shares_after_public_change, shares_before_delete, shares_touch_zone,
-- shares_token.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0003 and 0007.

SET LOCAL ROLE canopy_owner;

-- Shares.
CREATE OR REPLACE FUNCTION canopy.shares_before_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    root_in bigint;
    zone_name text;
BEGIN
    -- One table's plain lookup, which Citus plans in a shard's task (an
    -- EXISTS over the trigger's variables it cannot).
    SELECT name INTO zone_name FROM canopy.zones WHERE id = NEW.zone_id AND owner_id = NEW.owner_id;
    IF zone_name = '_defaultZone' THEN
        RAISE EXCEPTION 'the default zone can never be shared' USING ERRCODE = 'CN004';
    END IF;
    IF NEW.root_record_id IS NOT NULL THEN
        SELECT share_id INTO root_in FROM canopy.records WHERE id = NEW.root_record_id AND owner_id = NEW.owner_id;
        IF root_in IS NOT NULL THEN
            RAISE EXCEPTION 'the record is already inside a share' USING ERRCODE = 'CN002';
        END IF;
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS shares_before_insert ON canopy.shares;
CREATE TRIGGER shares_before_insert BEFORE INSERT ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_before_insert();

CREATE OR REPLACE FUNCTION canopy.shares_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    root record;
BEGIN
    INSERT INTO canopy.participants (share_id, owner_id, user_id, role, permission, status, accepted_at)
    VALUES (NEW.id, NEW.owner_id, NEW.owner_id, 'OWNER', 'READ_WRITE', 'ACCEPTED', now());
    IF NEW.root_record_id IS NOT NULL THEN
        UPDATE canopy.records SET share_id = NEW.id WHERE id = NEW.root_record_id AND owner_id = NEW.owner_id
        RETURNING zone_id, record_name INTO root;
        PERFORM canopy.propagate_share(root.zone_id, NEW.owner_id, root.record_name, NEW.id);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS shares_after_insert ON canopy.shares;
CREATE TRIGGER shares_after_insert AFTER INSERT ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_after_insert();

-- Turning the public link off removes every PUBLIC_USER; changing it changes
-- their permission (public users have the share's public permission).
CREATE OR REPLACE FUNCTION canopy.shares_after_public_change() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.public_permission = 'NONE' THEN
        DELETE FROM canopy.participants WHERE owner_id = NEW.owner_id AND share_id = NEW.id AND role = 'PUBLIC_USER';
    ELSE
        UPDATE canopy.participants SET permission = NEW.public_permission
         WHERE owner_id = NEW.owner_id AND share_id = NEW.id AND role = 'PUBLIC_USER' AND permission <> NEW.public_permission;
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS shares_after_public_change ON canopy.shares;
CREATE TRIGGER shares_after_public_change AFTER UPDATE OF public_permission ON canopy.shares
    FOR EACH ROW WHEN (OLD.public_permission IS DISTINCT FROM NEW.public_permission)
    EXECUTE FUNCTION canopy.shares_after_public_change();

-- A share being deleted: its accepted participants stop seeing the zone
-- (through it). When the whole zone goes, zones_before_delete did this and
-- the zone is no longer there to touch.
--
-- Its records leave it: share_id cleared here, not by the reference
-- (records_share_fkey has no action since migrations/0040: Citus refuses
-- SET NULL in a reference holding the distribution column; DECISIONS 157).
-- It is the UPDATE the SET NULL made, with the same record triggers (a
-- 'left_share' tombstone per record, the zone touched).
CREATE OR REPLACE FUNCTION canopy.shares_before_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM canopy.touch_zone(OLD.zone_id, OLD.owner_id);   -- the owner's feed: the share changed
    PERFORM canopy.record_departure(p.user_id, 'SHARED', OLD.zone_id, OLD.owner_id)
       FROM canopy.participants p
      WHERE p.owner_id = OLD.owner_id AND p.share_id = OLD.id AND p.status = 'ACCEPTED' AND p.role <> 'OWNER' AND p.user_id IS NOT NULL;
    UPDATE canopy.records SET share_id = NULL WHERE owner_id = OLD.owner_id AND share_id = OLD.id;
    RETURN OLD;
END
$$;

DROP TRIGGER IF EXISTS shares_before_delete ON canopy.shares;
CREATE TRIGGER shares_before_delete BEFORE DELETE ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_before_delete();

-- A share created or changed (title, public permission, participant count)
-- changes its zone.
CREATE OR REPLACE FUNCTION canopy.shares_touch_zone() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM canopy.touch_zone(NEW.zone_id, NEW.owner_id);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS shares_touch_zone ON canopy.shares;
CREATE TRIGGER shares_touch_zone AFTER INSERT OR UPDATE ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_touch_zone();

-- A share's URL token, in canopy.share_tokens (migrations/0041, DECISIONS
-- 159): how a share is found by its URL, and what keeps tokens unique
-- across owners. Written with the share, gone with it, on one PostgreSQL
-- (and on a Citus coordinator whose tables are not distributed yet). On a
-- Citus worker, where a distributed share's trigger runs, nothing: no
-- shard trigger may write a reference table (a worker wrote share_tokens
-- from here, in a transaction the coordinator prepared, and crashed at
-- COMMIT PREPARED), so save_share keeps the token (keep_share_token) and
-- delete_share forgets it, on the coordinator (DECISIONS 170).
CREATE OR REPLACE FUNCTION canopy.shares_token() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF canopy.citus_node() = 'worker' THEN
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM canopy.share_tokens WHERE url_token = OLD.url_token;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO canopy.share_tokens (url_token, owner_id, share_id) VALUES (NEW.url_token, NEW.owner_id, NEW.id);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS shares_token ON canopy.shares;
CREATE TRIGGER shares_token AFTER INSERT OR DELETE OR UPDATE OF url_token ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_token();

REVOKE ALL ON FUNCTION canopy.shares_before_insert() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.shares_after_insert() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.shares_after_public_change() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.shares_before_delete() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.shares_touch_zone() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.shares_token() FROM PUBLIC, canopy_gateway;
