-- Identity (API.md §10): people who sign in with an OpenID Connect provider,
-- and Canopy's own tokens that can be listed and revoked.
--
-- Structure only; the code that uses it (canopy.sign_in, the revocation
-- filter of canopy.token_for_selector, canopy.note_token_use) is in
-- sql/functions/identity.sql, the policies in sql/policies/identities.sql and
-- sql/policies/api_tokens.sql.
SET LOCAL ROLE canopy_owner;

-- A person's name as their provider gives it. `name` stays the unique handle
-- the CLI finds a user by; for people who signed in with a provider it is
-- made up (provider.hash, see canopy.sign_in). The API's User.name is
-- display_name when there is one, else name.
ALTER TABLE canopy.users
    ADD COLUMN display_name text CONSTRAINT users_display_name_length
        CHECK (display_name IS NULL OR length(display_name) BETWEEN 1 AND 255);
COMMENT ON COLUMN canopy.users.display_name IS 'The person''s name from their identity provider (the token''s name claim); the API shows it as User.name when set.';

ALTER TABLE canopy.api_tokens
    ADD COLUMN last_used_at timestamptz,
    ADD COLUMN revoked_at timestamptz;
COMMENT ON COLUMN canopy.api_tokens.last_used_at IS 'When the gateway last looked the token up (to the minute: it records a use at most once a minute).';
COMMENT ON COLUMN canopy.api_tokens.revoked_at IS 'When canopy users revoke revoked it; a revoked token authenticates nobody.';

CREATE TABLE canopy.identities (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id       bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    issuer        text NOT NULL CHECK (length(issuer) BETWEEN 1 AND 1000),
    subject       text NOT NULL CHECK (length(subject) BETWEEN 1 AND 1000),
    provider      text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (issuer, subject)
);
CREATE INDEX identities_user_id_idx ON canopy.identities (user_id);
COMMENT ON TABLE canopy.identities IS 'Who a user is at an identity provider: the (iss, sub) of the tokens that sign them in. One person, one user, forever.';
COMMENT ON COLUMN canopy.identities.user_id IS 'The user these tokens act as.';
COMMENT ON COLUMN canopy.identities.issuer IS 'The token''s iss claim, exactly as the provider sends it.';
COMMENT ON COLUMN canopy.identities.subject IS 'The token''s sub claim: the provider''s stable id of the person.';
COMMENT ON COLUMN canopy.identities.provider IS 'The provider''s name in the auth configuration at the first sign-in (for people reading this table).';
COMMENT ON COLUMN canopy.identities.created_at IS 'The first sign-in.';
COMMENT ON COLUMN canopy.identities.last_seen_at IS 'The latest sign-in the gateway recorded (at most once a minute).';

ALTER TABLE canopy.identities ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.identities FORCE ROW LEVEL SECURITY;
