-- Triggers on canopy.users: users_default_zone (users_after_insert).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0003.

SET LOCAL ROLE canopy_owner;

-- Every user has an implicit _defaultZone.
CREATE OR REPLACE FUNCTION canopy.users_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO canopy.zones (owner_id, name) VALUES (NEW.id, '_defaultZone');
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS users_default_zone ON canopy.users;
CREATE TRIGGER users_default_zone AFTER INSERT ON canopy.users
    FOR EACH ROW EXECUTE FUNCTION canopy.users_after_insert();

REVOKE ALL ON FUNCTION canopy.users_after_insert() FROM PUBLIC, canopy_gateway;
