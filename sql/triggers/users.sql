-- Triggers on canopy.users: users_forget_writer (users_after_delete) and
-- users_keep_public_owner. The default zone is canopy.create_user's
-- (sql/functions/identity.sql).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0003.

SET LOCAL ROLE canopy_owner;

-- Every user has a _defaultZone: canopy.create_user makes it with the user
-- (sql/functions/identity.sql). It was this file's AFTER INSERT trigger
-- users_default_zone, removed: on Citus canopy.users is a reference table,
-- where a trigger fires on every node (issue 67).
DROP TRIGGER IF EXISTS users_default_zone ON canopy.users;
DROP FUNCTION IF EXISTS canopy.users_after_insert();

-- A deleted user no longer names the writer of the records they created or
-- last changed (issue 51, migrations/0031): what `ON DELETE SET NULL` of the
-- foreign keys on records.created_by and modified_by did, as an AFTER ROW
-- trigger as theirs was. The records' own triggers fire on this UPDATE as
-- they did on the foreign key's: each record is changed (a new tag and
-- position), records_before_write keeps a creator only while they are a
-- user, and names the one deleting as the record's last writer (none, for
-- the administrator). A definer: every record, past row-level security.
CREATE OR REPLACE FUNCTION canopy.users_after_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE canopy.records
       SET created_by = CASE WHEN created_by = OLD.id THEN NULL ELSE created_by END,
           modified_by = CASE WHEN modified_by = OLD.id THEN NULL ELSE modified_by END
     WHERE created_by = OLD.id OR modified_by = OLD.id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS users_forget_writer ON canopy.users;
CREATE TRIGGER users_forget_writer AFTER DELETE ON canopy.users
    FOR EACH ROW EXECUTE FUNCTION canopy.users_after_delete();

REVOKE ALL ON FUNCTION canopy.users_after_delete() FROM PUBLIC, canopy_gateway;

-- User 0 (_public) owns the public database's zone (migrations/0038): it
-- is neither changed nor deleted, whoever asks (deleting it would take the
-- public zone and every public record with it). Only raises, so on Citus,
-- where canopy.users is a reference table whose triggers fire on every
-- node, it has no side effect to repeat.
CREATE OR REPLACE FUNCTION canopy.users_keep_public_owner() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'user 0 (_public) owns the public database''s zone: it cannot be changed or deleted'
        USING ERRCODE = 'CN004';
END
$$;

DROP TRIGGER IF EXISTS users_keep_public_owner ON canopy.users;
CREATE TRIGGER users_keep_public_owner BEFORE UPDATE OR DELETE ON canopy.users
    FOR EACH ROW WHEN (OLD.id = 0) EXECUTE FUNCTION canopy.users_keep_public_owner();

REVOKE ALL ON FUNCTION canopy.users_keep_public_owner() FROM PUBLIC, canopy_gateway;
