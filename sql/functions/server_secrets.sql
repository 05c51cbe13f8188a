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
