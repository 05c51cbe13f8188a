-- Who is asking: canopy.current_user_id(), the default of
-- canopy.records.created_by / modified_by that calls it, and bearer-token
-- lookup (canopy.token_for_selector).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0002, 0004 and 0009.

SET LOCAL ROLE canopy_owner;

-- Who is asking: the gateway sets canopy.user_id inside each request's
-- transaction (set_config(..., true)); `canopy psql --as` sets it for a
-- session. NULL when nobody is.
-- No SET search_path (archive/0009): it is not SECURITY DEFINER and calls
-- only pg_catalog, and without the SET PostgreSQL inlines it.
CREATE OR REPLACE FUNCTION canopy.current_user_id() RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT nullif(current_setting('canopy.user_id', true), '')::bigint $$;
COMMENT ON FUNCTION canopy.current_user_id() IS 'The canopy.users.id the current transaction acts for, from set_config(''canopy.user_id'', …, true); NULL for nobody.';

-- The column defaults that call it (the tables, in the baseline, are
-- created without them because they are code).
ALTER TABLE canopy.records
    ALTER COLUMN created_by SET DEFAULT canopy.current_user_id(),
    ALTER COLUMN modified_by SET DEFAULT canopy.current_user_id();

-- Authentication: the gateway looks a bearer token up by its public selector
-- and compares the secret's SHA-256 itself, in constant time. It cannot read
-- canopy.api_tokens otherwise.
CREATE OR REPLACE FUNCTION canopy.token_for_selector(p_selector text, OUT user_id bigint, OUT secret_hash bytea)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.user_id, t.secret_hash FROM canopy.api_tokens t WHERE t.selector = p_selector
$$;

REVOKE ALL ON FUNCTION canopy.current_user_id() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.token_for_selector(text) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.current_user_id() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.token_for_selector(text) TO canopy_gateway;
