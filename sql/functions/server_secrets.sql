-- canopy.server_secret(): the keys the gateway signs cursors and change
-- tokens with (table canopy.server_secrets, in the baseline).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0005. Rotation (rotate_server_secret,
-- accepted_server_secrets, and retired_server_secrets counting rotated keys
-- past their window) needs the accepted_until column of migration 0022.

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
-- what they signed: those `canopy restore` retired, and rotated keys past
-- their overlap window.
CREATE OR REPLACE FUNCTION canopy.retired_server_secrets(p_name text) RETURNS SETOF bytea
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT secret FROM canopy.server_secrets
     WHERE starts_with(name, p_name || '@retired:')
        OR (starts_with(name, p_name || '@rotated:') AND accepted_until <= now())
     ORDER BY created_at DESC, name DESC
$$;

REVOKE ALL ON FUNCTION canopy.retired_server_secrets(text) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.retired_server_secrets(text) TO canopy_gateway;

-- Rotating a key (`canopy secrets rotate NAME`): the current key is renamed
-- `<name>@rotated:<n>` and accepted until now() + p_overlap; p_candidate
-- becomes the current key. Answers when the old key stops being accepted;
-- NULL when there was none (a name never used yet is just created).
-- Administrators only.
CREATE OR REPLACE FUNCTION canopy.rotate_server_secret(p_name text, p_candidate bytea, p_overlap interval) RETURNS timestamptz
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_next integer;
    v_until timestamptz := now() + p_overlap;
BEGIN
    IF p_overlap < interval '0' THEN
        RAISE EXCEPTION 'the overlap must not be negative' USING ERRCODE = '22023';
    END IF;
    PERFORM 1 FROM canopy.server_secrets WHERE name = p_name FOR UPDATE;
    SELECT count(*) + 1 INTO v_next FROM canopy.server_secrets WHERE starts_with(name, p_name || '@rotated:');
    UPDATE canopy.server_secrets SET name = p_name || '@rotated:' || v_next, accepted_until = v_until WHERE name = p_name;
    IF NOT FOUND THEN
        v_until := NULL;
    END IF;
    INSERT INTO canopy.server_secrets (name, secret) VALUES (p_name, p_candidate);
    RETURN v_until;
END
$$;

REVOKE ALL ON FUNCTION canopy.rotate_server_secret(text, bytea, interval) FROM PUBLIC, canopy_gateway;

-- Keys rotated out but still inside their window, newest first: what they
-- signed is accepted as if signed by the current key.
CREATE OR REPLACE FUNCTION canopy.accepted_server_secrets(p_name text) RETURNS SETOF bytea
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT secret FROM canopy.server_secrets
     WHERE starts_with(name, p_name || '@rotated:') AND accepted_until > now()
     ORDER BY created_at DESC, name DESC
$$;

REVOKE ALL ON FUNCTION canopy.accepted_server_secrets(text) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.accepted_server_secrets(text) TO canopy_gateway;

-- What `canopy secrets list` shows: names and dates, never the keys.
CREATE OR REPLACE FUNCTION canopy.server_secret_summary()
    RETURNS TABLE (name text, created_at timestamptz, accepted_until timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.name, s.created_at, s.accepted_until FROM canopy.server_secrets s ORDER BY s.name
$$;

REVOKE ALL ON FUNCTION canopy.server_secret_summary() FROM PUBLIC, canopy_gateway;
