-- 0037: a web auth token rotates (issue 66, item 10; docs/WEB_SERVICES.md,
-- "The web token rotates"; DECISIONS 144, superseding 87). A Web Services
-- answer to a request that carried a web auth token carries the token to
-- send next (`X-Apple-CloudKit-Web-Auth-Token`). The row keeps its selector
-- (so its prefix, what `canopy users tokens` lists and revokeToken takes,
-- stays the same) and changes its secret; the secret it replaced keeps
-- working until previous_valid_until, for requests already on their way.
-- Structure only: canopy.rotate_web_token and the lookup that reads these
-- columns (canopy.token_secrets_for_selector) are in sql/functions/identity.sql.
SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.api_tokens
    ADD COLUMN rotated_at timestamptz,
    ADD COLUMN previous_secret_hash bytea CHECK (octet_length(previous_secret_hash) = 32),
    ADD COLUMN previous_valid_until timestamptz,
    ADD CONSTRAINT api_tokens_previous_secret CHECK ((previous_secret_hash IS NULL) = (previous_valid_until IS NULL));
COMMENT ON COLUMN canopy.api_tokens.rotated_at IS 'When the secret was last replaced (a web auth token rotating); NULL: never, the secret is created_at''s.';
COMMENT ON COLUMN canopy.api_tokens.previous_secret_hash IS 'SHA-256 of the secret the last rotation replaced: it still authenticates until previous_valid_until.';
COMMENT ON COLUMN canopy.api_tokens.previous_valid_until IS 'Until when previous_secret_hash still authenticates (the rotation''s overlap).';
