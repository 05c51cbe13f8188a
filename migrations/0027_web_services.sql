-- 0027: CloudKit Web Services (issue 37, API.md §16): containers' API
-- tokens, server-to-server keys, and the signatures those keys have made.
--
-- API tokens. A
-- container's API token (`ckAPIToken`) says which app is calling; every Web
-- Services request carries one, and a request without a valid token for
-- the container in its path is refused before anything else. It is not a
-- user's credential (CloudKit apps put it in their web pages): the user is
-- the ckWebAuthToken's. Stored as a public selector and the SHA-256 of the
-- secret, as canopy.api_tokens stores users' tokens; the gateway reads it
-- only through canopy.container_token_for_selector
-- (sql/functions/identity.sql), and `canopy tokens api` writes it.

SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.container_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    container    text NOT NULL CHECK (container ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$'),
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    selector     text NOT NULL UNIQUE CHECK (selector ~ '^[0-9a-f]{16}$'),
    secret_hash  bytea NOT NULL CHECK (length(secret_hash) = 32),
    sign_in_callback text CHECK (sign_in_callback ~ '^https?://'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);
COMMENT ON TABLE canopy.container_tokens IS 'CloudKit Web Services API tokens (ckAPIToken), one or more a container: canopy tokens api add. Not readable by the gateway; canopy.container_token_for_selector looks one up.';
COMMENT ON COLUMN canopy.container_tokens.container IS 'The container identifier the token opens (iCloud.com.example.app), as in the request path.';
COMMENT ON COLUMN canopy.container_tokens.name IS 'What the operator called it (the web app, the relay).';
COMMENT ON COLUMN canopy.container_tokens.selector IS 'The public part of the token (8 random bytes, hex): how it is found.';
COMMENT ON COLUMN canopy.container_tokens.secret_hash IS 'SHA-256 of the secret part; the secret itself is shown once, when the token is made.';
COMMENT ON COLUMN canopy.container_tokens.sign_in_callback IS 'Where the sign-in page sends a person back with ?ckWebAuthToken=… (the token''s "Sign In Callback"); NULL: the page posts the token to the window that opened it, from this origin only.';
COMMENT ON COLUMN canopy.container_tokens.created_at IS 'When it was made.';
COMMENT ON COLUMN canopy.container_tokens.revoked_at IS 'When canopy tokens api revoke withdrew it; NULL while it holds.';

ALTER TABLE canopy.container_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.container_tokens FORCE ROW LEVEL SECURITY;

-- Server-to-server keys. A key is an ECDSA P-256 public key the operator
-- registered with `canopy keys add --public-key FILE --as USER`; a request
-- signed with its private key (X-Apple-CloudKit-Request-KeyID, -ISO8601Date,
-- -SignatureV1) acts as that user, in the databases the key was given
-- (`public` only unless the operator said more: docs/WEB_SERVICES.md). The
-- gateway reads a key only through canopy.server_key (sql/functions/identity.sql).
CREATE TABLE canopy.server_keys (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id      text NOT NULL UNIQUE CHECK (key_id ~ '^[0-9a-f]{64}$'),
    container   text NOT NULL CHECK (container ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$'),
    user_id     bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    public_key  bytea NOT NULL CHECK (length(public_key) = 65),
    databases   text[] NOT NULL DEFAULT '{public}' CHECK (databases <@ ARRAY['public', 'private', 'shared'] AND cardinality(databases) > 0),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX server_keys_user_idx ON canopy.server_keys (user_id);
COMMENT ON TABLE canopy.server_keys IS 'CloudKit Web Services server-to-server keys (canopy keys add): a public key, the user it acts as, the databases it may reach. Not readable by the gateway; canopy.server_key looks one up.';
COMMENT ON COLUMN canopy.server_keys.key_id IS 'The key''s identifier (32 random bytes, hex), sent as X-Apple-CloudKit-Request-KeyID.';
COMMENT ON COLUMN canopy.server_keys.container IS 'The container whose requests it may sign.';
COMMENT ON COLUMN canopy.server_keys.user_id IS 'Whom its requests act as (CloudKit: the developer who made the key).';
COMMENT ON COLUMN canopy.server_keys.public_key IS 'The ECDSA P-256 public key, uncompressed (X9.63: 0x04, x, y).';
COMMENT ON COLUMN canopy.server_keys.databases IS 'The databases its requests may reach: public unless the operator granted the user''s own private or shared database too.';
COMMENT ON COLUMN canopy.server_keys.name IS 'What the operator called it.';
COMMENT ON COLUMN canopy.server_keys.created_at IS 'When it was registered.';
COMMENT ON COLUMN canopy.server_keys.revoked_at IS 'When canopy keys revoke withdrew it; NULL while it holds.';

-- Signatures already used, so none is accepted twice (a replay). Kept as
-- long as a signature's date can be accepted, then purged by
-- canopy.note_server_signature itself.
CREATE TABLE canopy.server_key_signatures (
    signature_hash bytea PRIMARY KEY CHECK (length(signature_hash) = 32),
    signed_at      timestamptz NOT NULL
);
CREATE INDEX server_key_signatures_signed_idx ON canopy.server_key_signatures (signed_at);
COMMENT ON TABLE canopy.server_key_signatures IS 'SHA-256 of each server-to-server signature accepted while its date is within the window: a second use is a replay.';
COMMENT ON COLUMN canopy.server_key_signatures.signature_hash IS 'SHA-256 of the signature bytes.';
COMMENT ON COLUMN canopy.server_key_signatures.signed_at IS 'The date the request was signed with (X-Apple-CloudKit-Request-ISO8601Date).';

ALTER TABLE canopy.server_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.server_keys FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.server_key_signatures ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.server_key_signatures FORCE ROW LEVEL SECURITY;
