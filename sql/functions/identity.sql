-- Who is asking: canopy.current_user_id(), canopy.act_as (Citus), canopy.owner_id_named, canopy.create_user, the default of
-- canopy.records.created_by / modified_by that calls it, bearer-token
-- lookup (canopy.token_for_selector, canopy.token_secrets_for_selector,
-- canopy.note_token_use), a web auth token's rotation (canopy.rotate_web_token,
-- migrations/0037) and sign-in with
-- an identity provider (canopy.sign_in, migrations/0013), and CloudKit Web
-- Services' container API tokens and server-to-server keys
-- (canopy.container_token_for_selector, canopy.server_key,
-- canopy.note_server_signature; migrations/0027).
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

-- Who is asking, on Citus (issue 67, DECISIONS 154): set_config is not
-- carried to the workers, where the shards' policies run; SET LOCAL is,
-- with citus.propagate_set_commands = 'local' (set here when Citus is
-- loaded). SET takes no parameters, so the gateway binds the values to this
-- function, which quotes them (%L) into its SET LOCALs: nothing is spliced
-- by the gateway. In the request's transaction, first. A NULL leaves its
-- setting alone. On a single PostgreSQL the gateway keeps set_config
-- (one statement for a read), so this is Citus's path only.
CREATE OR REPLACE FUNCTION canopy.act_as(p_user_id bigint, p_schema_mode text, p_device_id text, p_trace_parent text)
    RETURNS void LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF pg_catalog.current_setting('citus.propagate_set_commands', true) IS NOT NULL THEN
        SET LOCAL citus.propagate_set_commands = 'local';
        -- Plans made for the values bound (DECISIONS 168): Citus cannot plan
        -- a statement whose values are still parameters once it holds a
        -- subquery under row-level security ("could not create distributed
        -- plan"), and it routes to one shard by the owner's value.
        SET LOCAL plan_cache_mode = force_custom_plan;
        -- The gateway's asset marker (asset_marks.sql), a setting of its
        -- connection to the coordinator only: carried so, the shards' tasks
        -- mark assets for the URL signer too (DECISIONS 176).
        IF coalesce(pg_catalog.current_setting('canopy.asset_marker', true), '') <> '' THEN
            EXECUTE pg_catalog.format('SET LOCAL canopy.asset_marker = %L', pg_catalog.current_setting('canopy.asset_marker'));
        END IF;
    END IF;
    EXECUTE pg_catalog.format('SET LOCAL canopy.user_id = %L', coalesce(p_user_id::text, ''));
    IF p_schema_mode IS NOT NULL THEN
        EXECUTE pg_catalog.format('SET LOCAL canopy.schema_mode = %L', p_schema_mode);
    END IF;
    IF p_device_id IS NOT NULL THEN
        EXECUTE pg_catalog.format('SET LOCAL canopy.device_id = %L', p_device_id);
    END IF;
    IF p_trace_parent IS NOT NULL THEN
        EXECUTE pg_catalog.format('SET LOCAL canopy.trace_parent = %L', p_trace_parent);
    END IF;
END
$$;
COMMENT ON FUNCTION canopy.act_as(bigint, text, text, text) IS 'Says who the transaction acts for by SET LOCAL, which Citus carries to its workers (set_config is not); the gateway''s path on Citus.';

-- A user's id by their record name: the owner a gateway's statement names
-- when the request names a zone by its owner (the shared database, the
-- sharing mutations' ownerName), so that the statement gives every
-- zone-scoped table that owner (DECISIONS 169), which on Citus routes it to
-- the owner's one shard. IMMUTABLE, as what it answers is: a user's record
-- name never changes and an id is never used again. The gateway calls it
-- before such a statement and binds the id (SQLStatement.unboundOwners,
-- DECISIONS 176): Citus plans some statements (a record's share beside a
-- lookup's names) only with the id as a value, not as this call. One
-- PostgreSQL's statements do not need it: they join the owner's user row
-- (ZoneReference.namedOwners). A name that
-- is no user's answers NULL, which no zone's owner equals. SECURITY
-- DEFINER: the id is the gateway's to route by, not an answer a caller is
-- shown.
CREATE OR REPLACE FUNCTION canopy.owner_id_named(p_record_name text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE STRICT SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT u.id FROM canopy.users u WHERE u.record_name = p_record_name);
END
$$;
COMMENT ON FUNCTION canopy.owner_id_named(text) IS 'A user''s id by record name, for a statement to name a zone''s owner by (DECISIONS 169); IMMUTABLE because record names never change and ids are never reused.';

-- The column defaults that call it (the tables, in the baseline and
-- migrations/0017, are created without them because they are code).
ALTER TABLE canopy.records
    ALTER COLUMN created_by SET DEFAULT canopy.current_user_id(),
    ALTER COLUMN modified_by SET DEFAULT canopy.current_user_id();
ALTER TABLE canopy.uploads
    ALTER COLUMN user_id SET DEFAULT canopy.current_user_id();

-- A new user and their _defaultZone (every user has one), in the
-- caller's transaction: for `canopy users add` and canopy.sign_in. It was an
-- AFTER INSERT trigger on canopy.users (users_default_zone, archive/0003,
-- sql/triggers/users.sql); canopy.users becomes a reference table on Citus,
-- where a trigger fires on every node (issue 67, docs/CITUS.md), so the work
-- is the creating function's. Not the gateway's.
CREATE OR REPLACE FUNCTION canopy.create_user(p_name text, p_email text, p_phone text, p_display_name text, OUT id bigint, OUT record_name text)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO canopy.users (name, email, phone, display_name) VALUES (p_name, p_email, p_phone, p_display_name)
    RETURNING users.id, users.record_name INTO id, record_name;
    INSERT INTO canopy.zones (owner_id, name) VALUES (id, '_defaultZone');
END
$$;
COMMENT ON FUNCTION canopy.create_user(text, text, text, text) IS 'Creates a user and their _defaultZone; returns the id and userRecordName.';

-- Authentication: the gateway looks a bearer token up by its public selector
-- and compares the secret's SHA-256 itself, in constant time. It cannot read
-- canopy.api_tokens otherwise.
CREATE OR REPLACE FUNCTION canopy.token_for_selector(p_selector text, OUT user_id bigint, OUT secret_hash bytea)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.user_id, t.secret_hash FROM canopy.api_tokens t
     WHERE t.selector = p_selector AND t.revoked_at IS NULL
$$;

-- The same lookup with what a rotating web auth token needs (issue 66,
-- migrations/0037): the secret it replaced while that still holds, and
-- since when the current secret is the token's. canopy.token_for_selector
-- stays for gateways of the release before.
CREATE OR REPLACE FUNCTION canopy.token_secrets_for_selector(
    p_selector text, OUT user_id bigint, OUT secret_hash bytea, OUT previous_secret_hash bytea, OUT secret_age double precision
)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.user_id, t.secret_hash,
           CASE WHEN t.previous_valid_until > now() THEN t.previous_secret_hash END,
           extract(epoch FROM now() - coalesce(t.rotated_at, t.created_at))::double precision
      FROM canopy.api_tokens t
     WHERE t.selector = p_selector AND t.revoked_at IS NULL
$$;
COMMENT ON FUNCTION canopy.token_secrets_for_selector(text) IS 'A live token''s user, secret hash, the hash its last rotation replaced while that still holds, and the current secret''s age in seconds.';

-- A web auth token's rotation (issue 66; docs/WEB_SERVICES.md, "The web
-- token rotates"): the presented secret, when it is still the current one
-- and has been for p_age, becomes the previous one (valid for p_overlap
-- more) and p_next_hash the current: ROTATED. A current secret younger
-- than p_age stays: CURRENT. The gateway passes the SHA-256 of the secret
-- it has just verified and of one it generated, never a secret. Of two
-- requests racing with one secret, one rotates; the other, after the
-- first commits, finds the secret replaced: REPLACED (its answer carries
-- no new token: the first one's does). Each statement reads what the one
-- before committed, so the answer is the row as it is now.
CREATE OR REPLACE FUNCTION canopy.rotate_web_token(
    p_selector text, p_presented_hash bytea, p_next_hash bytea, p_age interval, p_overlap interval
) RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE canopy.api_tokens
       SET previous_secret_hash = secret_hash, previous_valid_until = now() + p_overlap,
           secret_hash = p_next_hash, rotated_at = now()
     WHERE selector = p_selector AND revoked_at IS NULL AND secret_hash = p_presented_hash
       AND coalesce(rotated_at, created_at) <= now() - p_age;
    IF FOUND THEN
        RETURN 'ROTATED';
    END IF;
    IF EXISTS (SELECT FROM canopy.api_tokens
                WHERE selector = p_selector AND revoked_at IS NULL AND secret_hash = p_presented_hash) THEN
        RETURN 'CURRENT';
    END IF;
    RETURN 'REPLACED';
END
$$;
COMMENT ON FUNCTION canopy.rotate_web_token(text, bytea, bytea, interval, interval) IS 'Replaces a live token''s current secret (when it is p_presented_hash and at least p_age old) by p_next_hash; the replaced one holds for p_overlap more. ROTATED, CURRENT (young, kept) or REPLACED (not the current secret).';

-- The gateway calls this after a token it looked up matched: `canopy users
-- tokens` shows when each was last used. At most one write a minute a token.
CREATE OR REPLACE FUNCTION canopy.note_token_use(p_selector text) RETURNS void
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE canopy.api_tokens SET last_used_at = now()
     WHERE selector = p_selector AND revoked_at IS NULL
       AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
$$;
COMMENT ON FUNCTION canopy.note_token_use(text) IS 'Records that a token was used (at most once a minute); called by the gateway after the secret matched.';

-- A signed-in person's own tokens (Canopy's addition to the API:
-- issueToken / revokeToken): an app that signed in with a provider's
-- short-lived JWT trades it for a Canopy token, and signs out by revoking
-- it. Only for canopy.current_user_id(); the gateway generates the token
-- and passes the selector and the secret's SHA-256, never the secret.
-- PL/pgSQL, as revoke_own_token: on Citus api_tokens is in Citus's
-- metadata (a coordinator table referencing users), and Citus cannot plan
-- a SQL function's parameters in an INSERT … SELECT or a data-modifying
-- WITH (DECISIONS 164).
CREATE OR REPLACE FUNCTION canopy.issue_token(p_selector text, p_secret_hash bytea) RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    prefix text;
BEGIN
    IF canopy.current_user_id() IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO canopy.api_tokens (user_id, selector, secret_hash)
    VALUES (canopy.current_user_id(), p_selector, p_secret_hash)
    RETURNING 'cnp_' || selector INTO prefix;
    RETURN prefix;
END
$$;
COMMENT ON FUNCTION canopy.issue_token(text, bytea) IS 'Stores a new token (selector, SHA-256 of its secret) for the current user; returns its prefix, or NULL for nobody.';

-- Revokes one of the caller's live tokens by its whole prefix (cnp_ and 16
-- hex digits); another user's token is never touched. The count is 0 or 1.
CREATE OR REPLACE FUNCTION canopy.revoke_own_token(p_prefix text) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    revoked integer;
BEGIN
    UPDATE canopy.api_tokens SET revoked_at = now()
     WHERE 'cnp_' || selector = p_prefix AND user_id = canopy.current_user_id() AND revoked_at IS NULL;
    GET DIAGNOSTICS revoked = ROW_COUNT;
    RETURN revoked;
END
$$;
COMMENT ON FUNCTION canopy.revoke_own_token(text) IS 'Revokes the current user''s live token with this prefix (cnp_ and 16 hex digits); returns how many (0 or 1).';

-- Sign-in with an identity provider (docs/API.md §10). The gateway has verified
-- the token (signature, iss, aud, exp, nbf); this finds the user of
-- (issuer, subject) or creates it, with its _defaultZone (the users
-- trigger), exactly once however many first requests race: they queue on an
-- advisory lock of the identity, and each statement below sees what the one
-- before it committed.
--
-- p_email and p_phone are passed only when the provider marked them
-- verified; they are what share invitations match. A verified address that
-- another user already holds stays that user's: the signing-in user is not
-- given it (and keeps whatever address it had). Accounts are never merged by
-- address (docs/IDENTITY.md, "When an address is already taken").
CREATE OR REPLACE FUNCTION canopy.sign_in(
    p_issuer text, p_subject text, p_provider text, p_display_name text, p_email text, p_phone text
) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found_user bigint;
    person text := p_issuer || chr(10) || p_subject;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('canopy.sign_in' || chr(10) || person, 0));
    SELECT i.user_id INTO found_user FROM canopy.identities i
     WHERE i.issuer = p_issuer AND i.subject = p_subject;
    IF found_user IS NULL THEN
        -- The handle the CLI finds the user by: the provider and a hash of
        -- who they are there (stable, and no personal data in it).
        SELECT u.id INTO found_user
          FROM canopy.create_user(p_provider || '.' || left(encode(sha256(convert_to(person, 'UTF8')), 'hex'), 16),
                                  NULL, NULL, p_display_name) u;
        INSERT INTO canopy.identities (user_id, issuer, subject, provider)
        VALUES (found_user, p_issuer, p_subject, p_provider);
    ELSE
        UPDATE canopy.identities SET last_seen_at = now()
         WHERE issuer = p_issuer AND subject = p_subject AND last_seen_at < now() - interval '1 minute';
        IF p_display_name IS NOT NULL THEN
            UPDATE canopy.users SET display_name = p_display_name
             WHERE id = found_user AND display_name IS DISTINCT FROM p_display_name;
        END IF;
    END IF;
    IF p_email IS NOT NULL AND NOT EXISTS (SELECT 1 FROM canopy.users u WHERE u.email = p_email) THEN
        BEGIN
            UPDATE canopy.users SET email = p_email WHERE id = found_user;
        EXCEPTION WHEN unique_violation THEN
            NULL;   -- taken by a concurrent sign-in a moment ago: theirs
        END;
    END IF;
    IF p_phone IS NOT NULL AND NOT EXISTS (SELECT 1 FROM canopy.users u WHERE u.phone = p_phone) THEN
        BEGIN
            UPDATE canopy.users SET phone = p_phone WHERE id = found_user;
        EXCEPTION WHEN unique_violation THEN
            NULL;
        END;
    END IF;
    RETURN found_user;
END
$$;
COMMENT ON FUNCTION canopy.sign_in(text, text, text, text, text, text) IS 'The user of a verified identity-provider token, created with its _defaultZone on the first sign-in; verified email/phone become the user''s when no other user holds them.';

-- CloudKit Web Services (migrations/0027): the container a ckAPIToken opens
-- and its secret's hash, by the token's public selector, for the gateway to
-- compare in constant time. Nothing for a revoked or unknown selector.
CREATE OR REPLACE FUNCTION canopy.container_token_for_selector(p_selector text, OUT container text, OUT secret_hash bytea)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.container, t.secret_hash FROM canopy.container_tokens t
     WHERE t.selector = p_selector AND t.revoked_at IS NULL
$$;
COMMENT ON FUNCTION canopy.container_token_for_selector(text) IS 'The container and secret hash of a live ckAPIToken, by its selector (CloudKit Web Services).';

-- Where the sign-in page sends a person back for an API token (its "Sign
-- In Callback"), by the token's public selector; NULL when it has none (the
-- page then posts the web token to the window that opened it). Not a secret.
CREATE OR REPLACE FUNCTION canopy.container_sign_in_callback(p_selector text, OUT container text, OUT sign_in_callback text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.container, t.sign_in_callback FROM canopy.container_tokens t
     WHERE t.selector = p_selector AND t.revoked_at IS NULL
$$;
COMMENT ON FUNCTION canopy.container_sign_in_callback(text) IS 'The container and sign-in callback URL of a live ckAPIToken, by its selector (the Web Services sign-in page).';

-- CloudKit Web Services' server-to-server keys (migrations/0027): a live
-- key by its identifier, for the gateway to verify a signature with.
CREATE OR REPLACE FUNCTION canopy.server_key(p_key_id text, OUT container text, OUT user_id bigint,
                                             OUT public_key bytea, OUT databases text[])
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT k.container, k.user_id, k.public_key, k.databases FROM canopy.server_keys k
     WHERE k.key_id = p_key_id AND k.revoked_at IS NULL
$$;
COMMENT ON FUNCTION canopy.server_key(text) IS 'The container, user, public key and databases of a live server-to-server key (CloudKit Web Services).';

-- A server-to-server signature, noted once: true the first time, false for
-- a replay. Signatures dated before p_oldest are purged (they can no longer
-- be accepted: the gateway refuses their date first).
CREATE OR REPLACE FUNCTION canopy.note_server_signature(p_signature_hash bytea, p_signed_at timestamptz, p_oldest timestamptz)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    noted boolean;
BEGIN
    DELETE FROM canopy.server_key_signatures WHERE signed_at < p_oldest;
    INSERT INTO canopy.server_key_signatures (signature_hash, signed_at) VALUES (p_signature_hash, p_signed_at)
    ON CONFLICT (signature_hash) DO NOTHING
    RETURNING true INTO noted;
    RETURN coalesce(noted, false);
END
$$;
COMMENT ON FUNCTION canopy.note_server_signature(bytea, timestamptz, timestamptz) IS 'Notes a server-to-server signature; false when it was used before (a replay). Purges signatures older than the window.';

REVOKE ALL ON FUNCTION canopy.current_user_id() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.act_as(bigint, text, text, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.owner_id_named(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.create_user(text, text, text, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.token_for_selector(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.token_secrets_for_selector(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.rotate_web_token(text, bytea, bytea, interval, interval) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.note_token_use(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.sign_in(text, text, text, text, text, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.issue_token(text, bytea) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.revoke_own_token(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.container_token_for_selector(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.server_key(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.container_sign_in_callback(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.note_server_signature(bytea, timestamptz, timestamptz) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.current_user_id() TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.act_as(bigint, text, text, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.owner_id_named(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.token_for_selector(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.token_secrets_for_selector(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.rotate_web_token(text, bytea, bytea, interval, interval) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.note_token_use(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.sign_in(text, text, text, text, text, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.issue_token(text, bytea) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.revoke_own_token(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.container_token_for_selector(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.server_key(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.container_sign_in_callback(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.note_server_signature(bytea, timestamptz, timestamptz) TO canopy_gateway;
