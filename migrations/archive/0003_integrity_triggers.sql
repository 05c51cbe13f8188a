-- Triggers that keep the invariants of API.md §1 that a plain constraint
-- cannot hold. Errors raised here use SQLSTATEs of class CN, which the
-- gateway maps to API codes in one place:
--   CN001 REFERENCE_VIOLATION   CN002 ALREADY_SHARED
--   CN003 LIMIT_EXCEEDED        CN004 INVALID_ARGUMENTS
--   CN005 PERMISSION_FAILURE
--
-- Functions that must see past row-level security are SECURITY DEFINER (they
-- run as canopy_owner, whose only policies are the canopy_owner_all ones in
-- 0004), pin search_path, and are not executable by PUBLIC.
SET LOCAL ROLE canopy_owner;

-- Every user has an implicit _defaultZone.
CREATE FUNCTION canopy.users_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO canopy.zones (owner_id, name) VALUES (NEW.id, '_defaultZone');
    RETURN NULL;
END
$$;
CREATE TRIGGER users_default_zone AFTER INSERT ON canopy.users
    FOR EACH ROW EXECUTE FUNCTION canopy.users_after_insert();

-- Hierarchy membership (records.share_id).
--
-- A record-rooted share covers its root and every record whose parent chain
-- reaches the root. Instead of walking that chain on every read, each record
-- carries the id of the share that covers it, and writes keep it current:
--   * records_before_write sets share_id of the row being written from its
--     parent (or to its own share if it is a root) when it is inserted or its
--     parent changes, and refuses parent cycles;
--   * records_after_write then pushes the value down the subtree below the
--     record (canopy.propagate_share), which also attaches records that were
--     dangling under this name and detaches the subtree of a deleted record;
--   * creating a share sets share_id on the root's subtree; deleting it
--     clears share_id through the foreign key (ON DELETE SET NULL).
-- A read therefore tests membership with `share_id = ANY(...)`, one indexed
-- comparison. Moving a subtree costs one recursive walk of that subtree.

-- Sets share_id := p_share_id on every record below (zone, name), stopping at
-- roots of other shares. A share root can never end up inside another share:
-- that is ALREADY_SHARED.
CREATE FUNCTION canopy.propagate_share(p_zone_id bigint, p_record_name text, p_share_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ids bigint[];
    names text[];
    nested text;
BEGIN
    WITH RECURSIVE sub (id, record_name, is_root) AS (
        SELECT r.id, r.record_name, EXISTS (SELECT 1 FROM canopy.shares s WHERE s.root_record_id = r.id)
          FROM canopy.records r
         WHERE r.zone_id = p_zone_id AND r.parent_name = p_record_name AND r.record_name <> p_record_name
        UNION
        SELECT r.id, r.record_name, EXISTS (SELECT 1 FROM canopy.shares s WHERE s.root_record_id = r.id)
          FROM canopy.records r
          JOIN sub ON r.zone_id = p_zone_id AND r.parent_name = sub.record_name AND NOT sub.is_root
    )
    SELECT coalesce(array_agg(id), '{}'), coalesce(array_agg(record_name), '{}')
      INTO ids, names
      FROM sub WHERE NOT is_root;

    IF p_share_id IS NOT NULL THEN
        SELECT r.record_name INTO nested
          FROM canopy.records r
          JOIN canopy.shares s ON s.root_record_id = r.id
         WHERE r.zone_id = p_zone_id AND r.parent_name = ANY (names || p_record_name)
           AND s.id <> p_share_id
         LIMIT 1;
        IF nested IS NOT NULL THEN
            RAISE EXCEPTION 'record % is the root of another share and cannot be inside this one', nested
                USING ERRCODE = 'CN002';
        END IF;
    END IF;

    UPDATE canopy.records r SET share_id = p_share_id
     WHERE r.id = ANY (ids) AND r.share_id IS DISTINCT FROM p_share_id;
END
$$;

CREATE FUNCTION canopy.records_before_write() RETURNS trigger
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
    PERFORM 1 FROM canopy.zones WHERE id = NEW.zone_id FOR NO KEY UPDATE;
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
    RETURN NEW;
END
$$;
CREATE TRIGGER records_before_write BEFORE INSERT OR UPDATE ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_before_write();

CREATE FUNCTION canopy.records_after_write() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    seq bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Nothing to record when the whole zone goes (ON DELETE CASCADE).
        PERFORM 1 FROM canopy.zones WHERE id = OLD.zone_id FOR NO KEY UPDATE;
        IF FOUND THEN
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
CREATE TRIGGER records_after_insert AFTER INSERT ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_after_write();
CREATE TRIGGER records_after_move AFTER UPDATE OF parent_name ON canopy.records
    FOR EACH ROW WHEN (OLD.parent_name IS DISTINCT FROM NEW.parent_name)
    EXECUTE FUNCTION canopy.records_after_write();
CREATE TRIGGER records_after_delete AFTER DELETE ON canopy.records
    FOR EACH ROW EXECUTE FUNCTION canopy.records_after_write();

-- Parents must exist in the same zone when a record is written; checked at
-- commit so a batch may save a child before its parent.
CREATE FUNCTION canopy.records_check_parent() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.parent_name IS NOT NULL
       AND EXISTS (SELECT 1 FROM canopy.records WHERE id = NEW.id AND parent_name = NEW.parent_name)
       AND NOT EXISTS (SELECT 1 FROM canopy.records WHERE zone_id = NEW.zone_id AND record_name = NEW.parent_name) THEN
        RAISE EXCEPTION 'parent % of record % does not exist in its zone', NEW.parent_name, NEW.record_name
            USING ERRCODE = 'CN001';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER records_parent_exists AFTER INSERT OR UPDATE OF parent_name ON canopy.records
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION canopy.records_check_parent();

-- Shares.
CREATE FUNCTION canopy.shares_before_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    root_in bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM canopy.zones WHERE id = NEW.zone_id AND name = '_defaultZone') THEN
        RAISE EXCEPTION 'the default zone can never be shared' USING ERRCODE = 'CN004';
    END IF;
    IF NEW.root_record_id IS NOT NULL THEN
        SELECT share_id INTO root_in FROM canopy.records WHERE id = NEW.root_record_id;
        IF root_in IS NOT NULL THEN
            RAISE EXCEPTION 'the record is already inside a share' USING ERRCODE = 'CN002';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER shares_before_insert BEFORE INSERT ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_before_insert();

CREATE FUNCTION canopy.shares_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    root record;
BEGIN
    INSERT INTO canopy.participants (share_id, user_id, role, permission, status, accepted_at)
    SELECT NEW.id, z.owner_id, 'OWNER', 'READ_WRITE', 'ACCEPTED', now()
      FROM canopy.zones z WHERE z.id = NEW.zone_id;
    IF NEW.root_record_id IS NOT NULL THEN
        UPDATE canopy.records SET share_id = NEW.id WHERE id = NEW.root_record_id
        RETURNING zone_id, record_name INTO root;
        PERFORM canopy.propagate_share(root.zone_id, root.record_name, NEW.id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER shares_after_insert AFTER INSERT ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_after_insert();

-- Turning the public link off removes every PUBLIC_USER; changing it changes
-- their permission (public users have the share's public permission).
CREATE FUNCTION canopy.shares_after_public_change() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.public_permission = 'NONE' THEN
        DELETE FROM canopy.participants WHERE share_id = NEW.id AND role = 'PUBLIC_USER';
    ELSE
        UPDATE canopy.participants SET permission = NEW.public_permission
         WHERE share_id = NEW.id AND role = 'PUBLIC_USER' AND permission <> NEW.public_permission;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER shares_after_public_change AFTER UPDATE OF public_permission ON canopy.shares
    FOR EACH ROW WHEN (OLD.public_permission IS DISTINCT FROM NEW.public_permission)
    EXECUTE FUNCTION canopy.shares_after_public_change();

-- Participants: at most 100 per share besides the owner and those REMOVED,
-- counted on the share row (whose lock serialises concurrent additions).
CREATE FUNCTION canopy.participants_count() RETURNS trigger
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
         WHERE id = coalesce(NEW.share_id, OLD.share_id);
    END IF;
    RETURN NULL;
EXCEPTION WHEN check_violation THEN
    RAISE EXCEPTION 'a share has at most 100 participants' USING ERRCODE = 'CN003';
END
$$;
CREATE TRIGGER participants_count AFTER INSERT OR UPDATE OR DELETE ON canopy.participants
    FOR EACH ROW EXECUTE FUNCTION canopy.participants_count();

