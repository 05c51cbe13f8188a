-- Roles, schema and extensions. Runs as the administrator that `canopy
-- migrate` connects as (a superuser in the embedded cluster).
--
-- canopy_owner    NOLOGIN. Owns every table and function. Its SECURITY
--                 DEFINER functions are the only code that acts as it.
-- canopy_gateway  LOGIN, NOBYPASSRLS, owns nothing. The role the HTTP gateway
--                 and `canopy psql --as` connect as; it says who is asking
--                 with set_config('canopy.user_id', …, true) and row-level
--                 security decides the rest.
--
-- Roles are cluster-wide and several databases of one cluster may be migrated
-- at once (tests do), so creation tolerates a concurrent creator.

DO $$
BEGIN
    BEGIN
        CREATE ROLE canopy_owner NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
    BEGIN
        CREATE ROLE canopy_gateway LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
    -- Whatever an earlier version or a person did, these roles never bypass
    -- RLS. Altered only when wrong: concurrent ALTERs of one role collide.
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'canopy_owner'
               AND (rolcanlogin OR rolsuper OR rolbypassrls OR rolcreatedb OR rolcreaterole)) THEN
        ALTER ROLE canopy_owner NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'canopy_gateway'
               AND (NOT rolcanlogin OR rolsuper OR rolbypassrls OR rolcreatedb OR rolcreaterole)) THEN
        ALTER ROLE canopy_gateway LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END
$$;

-- The migrator bootstraps the schema (for canopy.schema_migrations) before
-- this file runs; hand it to the owner.
CREATE SCHEMA IF NOT EXISTS canopy;
ALTER SCHEMA canopy OWNER TO canopy_owner;
COMMENT ON SCHEMA canopy IS 'Canopy: CloudKit-style users, zones, records and shares. Row-level security decides what each user sees; see the COMMENT on each table.';

REVOKE ALL ON SCHEMA canopy FROM PUBLIC;
GRANT USAGE ON SCHEMA canopy TO canopy_gateway;

ALTER TABLE canopy.schema_migrations OWNER TO canopy_owner;
ALTER TABLE canopy.schema_migrations ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.schema_migrations FORCE ROW LEVEL SECURITY;

-- btree_gist: the exclusion constraint that keeps zone-wide and
-- record-rooted shares out of the same zone.
CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA public;

-- The change position of every write; see canopy.records.change_seq.
CREATE SEQUENCE canopy.change_seq AS bigint;
ALTER SEQUENCE canopy.change_seq OWNER TO canopy_owner;
COMMENT ON SEQUENCE canopy.change_seq IS 'Position of every record write and deletion. Within one zone, positions are handed out under the zone''s row lock, so they follow commit order there.';
