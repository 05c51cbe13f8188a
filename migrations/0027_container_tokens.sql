-- 0027: CloudKit Web Services' API tokens (issue 37, API.md §16). A
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
