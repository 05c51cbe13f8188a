-- What a caller may read in the public zone changes with the grants
-- (canopy.record_type_grants, written by `canopy schema apply`) and the
-- custom roles' members (canopy.role_members, `canopy roles add|remove`),
-- not only with its records: triggers public_grants_changed and
-- public_role_members_changed move the public zone's access_changed_seq
-- (migrations/0025), so every public change token from before is
-- CHANGE_TOKEN_EXPIRED and its client fetches what it may read now
-- (docs/PUBLIC_DATABASE.md).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.public_access_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    zone bigint;
    position bigint;
BEGIN
    SELECT id INTO zone FROM canopy.zones WHERE owner_id = 0 FOR NO KEY UPDATE;
    IF zone IS NOT NULL THEN
        -- A new base of the zone's positions (DECISIONS 165): the change is
        -- above every position before it, and every later write is above it.
        UPDATE canopy.zones SET feed_base = feed_base + 1, access_changed_seq = (feed_base + 1) << 20,
                                changed_xid = pg_current_xact_id()
         WHERE id = zone AND owner_id = 0
        RETURNING access_changed_seq INTO position;
        IF current_setting('canopy.zone_position_' || zone, true) <> '' THEN
            PERFORM set_config('canopy.zone_position_' || zone, position::text, true);
        END IF;
        -- Live public feeds look again (and find their token expired).
        PERFORM canopy.notify_changes(zone || ' 0');
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS public_grants_changed ON canopy.record_type_grants;
CREATE TRIGGER public_grants_changed AFTER INSERT OR UPDATE OR DELETE ON canopy.record_type_grants
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.public_access_changed();

DROP TRIGGER IF EXISTS public_role_members_changed ON canopy.role_members;
CREATE TRIGGER public_role_members_changed AFTER INSERT OR UPDATE OR DELETE ON canopy.role_members
    FOR EACH STATEMENT EXECUTE FUNCTION canopy.public_access_changed();

REVOKE ALL ON FUNCTION canopy.public_access_changed() FROM PUBLIC, canopy_gateway;
