-- Keeping canopy.memberships (migrations/0014) equal to what zones and
-- participants say (canopy.membership_derivation, the view of 0014): triggers zones_membership and participants_membership,
-- and canopy.rebuild_memberships() for rows loaded with triggers off.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- Deletions need no trigger: a membership row goes with its zone, share,
-- participant or user (ON DELETE CASCADE).

SET LOCAL ROLE canopy_owner;

-- A new zone: its owner's row. A zone's owner never changes.
CREATE OR REPLACE FUNCTION canopy.zones_membership() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- By EXECUTE … USING: on Citus, in a shard's task, an INSERT … SELECT
    -- over the function's variables cannot be planned ("could not create
    -- distributed plan"); with the values bound it runs on the zone's shard.
    EXECUTE 'INSERT INTO canopy.memberships (user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write)
             SELECT user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write
               FROM canopy.membership_derivation WHERE owner_id = $1 AND zone_id = $2 AND share_id IS NULL'
        USING NEW.owner_id, NEW.id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS zones_membership ON canopy.zones;
CREATE TRIGGER zones_membership AFTER INSERT ON canopy.zones
    FOR EACH ROW EXECUTE FUNCTION canopy.zones_membership();

-- A participant added or changed: their row while they are ACCEPTED and
-- have an account, none otherwise. A share's zone and root never change.
CREATE OR REPLACE FUNCTION canopy.participants_membership() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.status = 'ACCEPTED' AND NEW.user_id IS NOT NULL THEN
        EXECUTE 'INSERT INTO canopy.memberships (user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write)
                 SELECT user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write
                   FROM canopy.membership_derivation WHERE owner_id = $1 AND participant_id = $2
                 ON CONFLICT (participant_id, owner_id) DO UPDATE
                     SET user_id = EXCLUDED.user_id, role = EXCLUDED.role, can_write = EXCLUDED.can_write'
            USING NEW.owner_id, NEW.id;
    ELSIF TG_OP = 'UPDATE' THEN
        DELETE FROM canopy.memberships WHERE owner_id = NEW.owner_id AND participant_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS participants_membership ON canopy.participants;
CREATE TRIGGER participants_membership AFTER INSERT OR UPDATE OF user_id, role, permission, status ON canopy.participants
    FOR EACH ROW EXECUTE FUNCTION canopy.participants_membership();

-- Any change to memberships starts a new generation of the policy probes'
-- remembered answers (sql/functions/policy_probes.sql, DECISIONS 158): an
-- answer is kept under a key holding the generation it was read in.
CREATE OR REPLACE FUNCTION canopy.memberships_generation() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM set_config('canopy.memberships_generation',
        (coalesce(nullif(current_setting('canopy.memberships_generation', true), ''), '0')::bigint + 1)::text, true);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS memberships_generation ON canopy.memberships;
CREATE TRIGGER memberships_generation AFTER INSERT OR UPDATE OR DELETE ON canopy.memberships
    FOR EACH ROW EXECUTE FUNCTION canopy.memberships_generation();

-- Memberships made anew from zones and participants, for data loaded with
-- triggers off (session_replication_role = replica, as the benchmark's
-- population loader does) or restored table by table. Administrators only.
CREATE OR REPLACE FUNCTION canopy.rebuild_memberships() RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    total bigint;
BEGIN
    LOCK TABLE canopy.zones, canopy.participants IN SHARE MODE;
    DELETE FROM canopy.memberships;
    INSERT INTO canopy.memberships (user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write)
    SELECT user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write FROM canopy.membership_derivation;
    SELECT count(*) INTO total FROM canopy.memberships;
    RETURN total;
END
$$;
COMMENT ON FUNCTION canopy.rebuild_memberships() IS 'Recomputes canopy.memberships from zones and participants (after loading rows with triggers off); returns the rows it holds.';

REVOKE ALL ON FUNCTION canopy.zones_membership() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.participants_membership() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.rebuild_memberships() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.memberships_generation() FROM PUBLIC, canopy_gateway;
