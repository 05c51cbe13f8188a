-- canopy.server_secret(): the keys the gateway signs cursors and change
-- tokens with (table canopy.server_secrets, in the baseline).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0005.

SET LOCAL ROLE canopy_owner;

-- Secrets the gateway signs cursors (and later change tokens) with, kept in
-- the database so every gateway process agrees. Created on first use from a
-- candidate the caller generated; nobody reads the table directly.
CREATE OR REPLACE FUNCTION canopy.server_secret(p_name text, p_candidate bytea) RETURNS bytea
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO canopy.server_secrets (name, secret) VALUES (p_name, p_candidate) ON CONFLICT DO NOTHING;
    RETURN (SELECT secret FROM canopy.server_secrets WHERE name = p_name);
END
$$;

REVOKE ALL ON FUNCTION canopy.server_secret(text, bytea) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.server_secret(text, bytea) TO canopy_gateway;

-- Retiring a key (issue 20, backup and restore): the row is renamed
-- `<name>@retired:<n>`, so the next server_secret(name) call makes a fresh
-- key, and what was signed with the old one can still be recognised as
-- ours-but-from-before (a change token from before a restore is
-- CHANGE_TOKEN_EXPIRED, not INVALID_ARGUMENTS). Administrators only:
-- `canopy restore` calls it.
CREATE OR REPLACE FUNCTION canopy.retire_server_secret(p_name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_next integer;
BEGIN
    SELECT count(*) + 1 INTO v_next FROM canopy.server_secrets WHERE starts_with(name, p_name || '@retired:');
    UPDATE canopy.server_secrets SET name = p_name || '@retired:' || v_next WHERE name = p_name;
    RETURN FOUND;
END
$$;

REVOKE ALL ON FUNCTION canopy.retire_server_secret(text) FROM PUBLIC, canopy_gateway;

-- The retired keys of a name, newest first, for the gateway to recognise
-- what they signed.
CREATE OR REPLACE FUNCTION canopy.retired_server_secrets(p_name text) RETURNS SETOF bytea
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT secret FROM canopy.server_secrets WHERE starts_with(name, p_name || '@retired:') ORDER BY created_at DESC, name DESC
$$;

REVOKE ALL ON FUNCTION canopy.retired_server_secrets(text) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.retired_server_secrets(text) TO canopy_gateway;
