-- Each share's activity log (issue 38, docs/API.md §17): log_share_activity and
-- the triggers that call it, shares_activity, participants_activity and
-- share_requests_activity; purge_share_activity; share_requests_made_now
-- (a request's stamp, taken on the node that writes it).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- Entries are written here, in the transaction of the change, and nowhere
-- else: a change that rolls back leaves none, and the gateway cannot write,
-- change or delete one (sql/policies/share_requests.sql). The actor is the
-- request's user (NULL for an administrator's command or the server).

SET LOCAL ROLE canopy_owner;

-- One entry. The owner is the zone's; when the zone is already gone (a
-- cascade), the owner the share's earlier entries name. Accounts being
-- deleted in this transaction are not referenced (their foreign keys would
-- refuse the row), and when the owner themself is gone nothing is written:
-- their entries go with them.
-- p_owner_id is the zone's owner (migrations/0039): the share, zone and
-- root are found by it, on the zone's shard on Citus. The version without
-- it is dropped.
DROP FUNCTION IF EXISTS canopy.log_share_activity(bigint, bigint, text, bigint, text, jsonb);
CREATE OR REPLACE FUNCTION canopy.log_share_activity(
    p_share_id bigint, p_zone_id bigint, p_owner_id bigint, p_event text, p_subject_id bigint, p_subject text, p_detail jsonb
) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint;
    zone_label text;
    root_label text;
    actor bigint := canopy.current_user_id();
    actor_record_name text;
BEGIN
    SELECT z.owner_id, z.name INTO owner, zone_label FROM canopy.zones z WHERE z.id = p_zone_id AND z.owner_id = p_owner_id;
    -- A join, so by EXECUTE … USING: in a shard's trigger on Citus, only a
    -- single table's plain lookup may use the function's variables
    -- (DECISIONS 164).
    EXECUTE 'SELECT r.record_name
               FROM canopy.shares s JOIN canopy.records r ON r.owner_id = s.owner_id AND r.id = s.root_record_id
              WHERE s.id = $1 AND s.owner_id = $2'
       INTO root_label USING p_share_id, p_owner_id;
    IF owner IS NULL OR root_label IS NULL THEN
        -- A cascade: what the share's first entry knew (SELECT INTO a row
        -- that is not there would set every target to NULL).
        EXECUTE 'SELECT coalesce($3, first.owner_id), coalesce($4, first.zone_name), coalesce($5, first.root_name)
                   FROM (SELECT 1) one
                   LEFT JOIN LATERAL (SELECT a.owner_id, a.zone_name, a.root_name FROM canopy.share_activity a
                                       WHERE a.share_id = $1 AND a.owner_id = $2 ORDER BY a.id LIMIT 1) first ON true'
           INTO owner, zone_label, root_label USING p_share_id, p_owner_id, owner, zone_label, root_label;
    END IF;
    IF owner IS NULL OR NOT EXISTS (SELECT 1 FROM canopy.users WHERE id = owner) THEN
        RETURN;
    END IF;
    SELECT u.record_name INTO actor_record_name FROM canopy.users u WHERE u.id = actor;
    IF actor_record_name IS NULL THEN
        actor := NULL;
    END IF;
    IF p_subject_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM canopy.users WHERE id = p_subject_id) THEN
        p_subject_id := NULL;
    END IF;
    INSERT INTO canopy.share_activity (share_id, zone_id, zone_name, root_name, owner_id, event, actor_id, actor_name, subject_id, subject, detail)
    VALUES (p_share_id, p_zone_id, zone_label, root_label, owner, p_event, actor, actor_record_name, p_subject_id, p_subject, coalesce(p_detail, '{}'));
END
$$;

-- Who a participant row names: their userRecordName, else the email or
-- phone they were invited by.
CREATE OR REPLACE FUNCTION canopy.participant_label(p canopy.participants) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT u.record_name FROM canopy.users u WHERE u.id = p.user_id), p.email, p.phone)
$$;

-- Shares: created; public permission or access requests turned on or off;
-- deleted, and why (the share deleted, its zone deleted, its root record
-- deleted: a cascade finds its parent row already gone).
CREATE OR REPLACE FUNCTION canopy.shares_activity() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    root_name text;
    cause text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT record_name INTO root_name FROM canopy.records WHERE id = NEW.root_record_id AND owner_id = NEW.owner_id;
        PERFORM canopy.log_share_activity(NEW.id, NEW.zone_id, NEW.owner_id, 'SHARE_CREATED', NULL, NULL,
            jsonb_build_object('kind', NEW.kind, 'rootRecordName', root_name, 'publicPermission', NEW.public_permission));
    ELSIF TG_OP = 'UPDATE' THEN
        IF NEW.public_permission IS DISTINCT FROM OLD.public_permission THEN
            PERFORM canopy.log_share_activity(NEW.id, NEW.zone_id, NEW.owner_id, 'PUBLIC_PERMISSION_CHANGED', NULL, NULL,
                jsonb_build_object('from', OLD.public_permission, 'to', NEW.public_permission));
        END IF;
        IF NEW.allows_access_requests IS DISTINCT FROM OLD.allows_access_requests THEN
            PERFORM canopy.log_share_activity(NEW.id, NEW.zone_id, NEW.owner_id, 'ACCESS_REQUESTS_CHANGED', NULL, NULL,
                jsonb_build_object('from', OLD.allows_access_requests, 'to', NEW.allows_access_requests));
        END IF;
    ELSE
        -- One table's plain lookup at a time (Citus plans those in the
        -- share's shard's task; not an EXISTS over the trigger's variables).
        cause := 'SHARE_DELETED';
        PERFORM 1 FROM canopy.zones WHERE id = OLD.zone_id AND owner_id = OLD.owner_id;
        IF NOT FOUND THEN
            cause := 'ZONE_DELETED';
        ELSIF OLD.root_record_id IS NOT NULL THEN
            PERFORM 1 FROM canopy.records WHERE id = OLD.root_record_id AND owner_id = OLD.owner_id;
            IF NOT FOUND THEN
                cause := 'ROOT_DELETED';
            END IF;
        END IF;
        PERFORM canopy.log_share_activity(OLD.id, OLD.zone_id, OLD.owner_id, cause, NULL, NULL, jsonb_build_object('kind', OLD.kind));
        UPDATE canopy.share_activity SET share_gone_at = now() WHERE owner_id = OLD.owner_id AND share_id = OLD.id AND share_gone_at IS NULL;
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS shares_activity ON canopy.shares;
CREATE TRIGGER shares_activity AFTER INSERT OR UPDATE OF public_permission, allows_access_requests OR DELETE ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_activity();

-- Participants: invited (or invited again), accepted (or joined by the
-- public link), role or permission changed, removed, left. An approved
-- requester's row is the request's REQUEST_APPROVED entry; a public user's
-- permission following the share's is its PUBLIC_PERMISSION_CHANGED. When
-- the share itself is going, its entry says so.
CREATE OR REPLACE FUNCTION canopy.participants_activity() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    zone bigint;
    row_now canopy.participants := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    who text;
    self boolean;
BEGIN
    IF row_now.role = 'OWNER' THEN
        RETURN NULL;
    END IF;
    SELECT s.zone_id INTO zone FROM canopy.shares s WHERE s.id = row_now.share_id AND s.owner_id = row_now.owner_id;
    IF zone IS NULL THEN
        RETURN NULL;
    END IF;
    who := canopy.participant_label(row_now);
    self := row_now.user_id IS NOT NULL AND row_now.user_id = canopy.current_user_id();
    IF TG_OP = 'INSERT' THEN
        IF NEW.status = 'PENDING' THEN
            PERFORM canopy.log_share_activity(NEW.share_id, zone, NEW.owner_id, 'INVITED', NEW.user_id, who,
                jsonb_build_object('role', NEW.role, 'permission', NEW.permission));
        ELSIF NEW.status = 'ACCEPTED' AND NOT NEW.is_approved_requester THEN
            PERFORM canopy.log_share_activity(NEW.share_id, zone, NEW.owner_id, 'ACCEPTED', NEW.user_id, who,
                jsonb_build_object('role', NEW.role, 'permission', NEW.permission));
        END IF;
    ELSIF TG_OP = 'UPDATE' THEN
        IF NEW.status = 'REMOVED' AND OLD.status <> 'REMOVED' THEN
            PERFORM canopy.log_share_activity(NEW.share_id, zone, NEW.owner_id, CASE WHEN self THEN 'LEFT' ELSE 'REMOVED' END,
                NEW.user_id, who, jsonb_build_object('role', OLD.role, 'permission', OLD.permission));
        ELSIF NEW.status = 'PENDING' AND OLD.status = 'REMOVED' THEN
            PERFORM canopy.log_share_activity(NEW.share_id, zone, NEW.owner_id, 'INVITED', NEW.user_id, who,
                jsonb_build_object('role', NEW.role, 'permission', NEW.permission, 'again', true));
        ELSIF NEW.status = 'ACCEPTED' AND OLD.status <> 'ACCEPTED' THEN
            IF NOT (NEW.is_approved_requester AND OLD.status = 'REMOVED') THEN
                PERFORM canopy.log_share_activity(NEW.share_id, zone, NEW.owner_id, 'ACCEPTED', NEW.user_id, who,
                    jsonb_build_object('role', NEW.role, 'permission', NEW.permission));
            END IF;
        ELSIF NEW.status <> 'REMOVED' AND NEW.role <> 'PUBLIC_USER'
              AND (NEW.role <> OLD.role OR NEW.permission <> OLD.permission) THEN
            PERFORM canopy.log_share_activity(NEW.share_id, zone, NEW.owner_id, 'PERMISSION_CHANGED', NEW.user_id, who,
                jsonb_build_object('from', jsonb_build_object('role', OLD.role, 'permission', OLD.permission),
                                   'to', jsonb_build_object('role', NEW.role, 'permission', NEW.permission)));
        END IF;
    ELSIF OLD.status <> 'REMOVED' THEN
        PERFORM canopy.log_share_activity(OLD.share_id, zone, OLD.owner_id, CASE WHEN self THEN 'LEFT' ELSE 'REMOVED' END,
            OLD.user_id, who, jsonb_build_object('role', OLD.role, 'permission', OLD.permission));
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS participants_activity ON canopy.participants;
CREATE TRIGGER participants_activity AFTER INSERT OR UPDATE OR DELETE ON canopy.participants
    FOR EACH ROW EXECUTE FUNCTION canopy.participants_activity();

-- Access requests: made (or made again), approved, denied, blocked,
-- unblocked. Each also changes the share's zone, so the owner's DATABASE
-- subscriptions (and administrators' SHARED ones) fire: that is how a
-- request reaches its deciders by push (docs/SHARING.md).
CREATE OR REPLACE FUNCTION canopy.share_requests_activity() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    zone bigint;
    row_now canopy.share_requests := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    who text;
    event text;
    permission text;
BEGIN
    SELECT s.zone_id INTO zone FROM canopy.shares s WHERE s.id = row_now.share_id AND s.owner_id = row_now.owner_id;
    IF zone IS NULL THEN
        RETURN NULL;   -- the share is going: its own entry says so
    END IF;
    SELECT u.record_name INTO who FROM canopy.users u WHERE u.id = row_now.user_id;
    IF TG_OP = 'DELETE' THEN
        event := CASE WHEN OLD.status = 'BLOCKED' THEN 'REQUESTER_UNBLOCKED' END;
    ELSIF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status THEN
        event := CASE NEW.status WHEN 'PENDING' THEN 'REQUEST_MADE' WHEN 'APPROVED' THEN 'REQUEST_APPROVED'
                                 WHEN 'DENIED' THEN 'REQUEST_DENIED' ELSE 'REQUESTER_BLOCKED' END;
    END IF;
    IF event IS NULL THEN
        RETURN NULL;
    END IF;
    IF event = 'REQUEST_APPROVED' THEN
        SELECT p.permission INTO permission FROM canopy.participants p
         WHERE p.owner_id = NEW.owner_id AND p.share_id = NEW.share_id AND p.user_id = NEW.user_id;
    END IF;
    PERFORM canopy.log_share_activity(row_now.share_id, zone, row_now.owner_id, event, row_now.user_id, who,
        CASE WHEN permission IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('permission', permission) END);
    PERFORM canopy.touch_zone(zone, row_now.owner_id);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS share_requests_activity ON canopy.share_requests;
CREATE TRIGGER share_requests_activity AFTER INSERT OR UPDATE OR DELETE ON canopy.share_requests
    FOR EACH ROW EXECUTE FUNCTION canopy.share_requests_activity();

-- A request made (or made again) is stamped where its row is written: the
-- push fan-out fires a decider's subscription for a request made in the
-- change by comparing requested_at with the outbox row's created_at, which
-- touch_zone writes in this same trigger chain (PushFanOut). On Citus a
-- column's default now(), and now() in request_share_access's UPDATE, are
-- the coordinator's clock, read before the worker's transaction began:
-- the request then looked older than its own change and fired nothing.
-- On one PostgreSQL both are the transaction's start already.
CREATE OR REPLACE FUNCTION canopy.share_requests_made_now() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.status = 'PENDING' AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'PENDING') THEN
        NEW.requested_at := now();
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION canopy.share_requests_made_now() FROM PUBLIC, canopy_gateway;

DROP TRIGGER IF EXISTS a_requested_now ON canopy.share_requests;
CREATE TRIGGER a_requested_now BEFORE INSERT OR UPDATE OF status ON canopy.share_requests
    FOR EACH ROW EXECUTE FUNCTION canopy.share_requests_made_now();

-- The entries of shares deleted longer than p_retention ago; returns how
-- many went. Called by the gateway's history purge (canopy serve
-- --share-activity-retention-days).
-- PL/pgSQL by EXECUTE … USING (DECISIONS 178): Citus cannot plan a SQL
-- function's parameters over the entries, distributed by owner there.
CREATE OR REPLACE FUNCTION canopy.purge_share_activity(p_retention interval) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    gone bigint;
BEGIN
    EXECUTE 'DELETE FROM canopy.share_activity WHERE share_gone_at < now() - $1' USING p_retention;
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$$;

REVOKE ALL ON FUNCTION canopy.log_share_activity(bigint, bigint, bigint, text, bigint, text, jsonb) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.participant_label(canopy.participants) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.shares_activity() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.participants_activity() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.share_requests_activity() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.purge_share_activity(interval) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.purge_share_activity(interval) TO canopy_gateway;
