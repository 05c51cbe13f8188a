-- Uploads (API.md §11, issue 16): bytes a user sent to POST /assets, kept
-- in the asset store under their SHA-256, waiting to be attached to a
-- record by their upload token. Structure only; the policies are in
-- sql/policies/uploads.sql.
SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.uploads (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id       bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    token_hash    bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    sha256        text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size          bigint NOT NULL CHECK (size >= 0),
    content_type  text NOT NULL CHECK (length(content_type) BETWEEN 1 AND 255),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL DEFAULT now() + interval '24 hours',
    used_at       timestamptz
);
CREATE INDEX uploads_user_idx ON canopy.uploads (user_id, created_at);
CREATE INDEX uploads_sha256_idx ON canopy.uploads (sha256);
COMMENT ON TABLE canopy.uploads IS 'Bytes sent to POST /assets, each usable once by its uploader within 24 hours to attach to a record (API.md §11).';
COMMENT ON COLUMN canopy.uploads.user_id IS 'The uploader: the only user who may attach it.';
COMMENT ON COLUMN canopy.uploads.token_hash IS 'SHA-256 of the upload token (the token itself is never stored).';
COMMENT ON COLUMN canopy.uploads.sha256 IS 'SHA-256 of the bytes (64 lowercase hex digits): their name in the asset store.';
COMMENT ON COLUMN canopy.uploads.size IS 'Length of the bytes.';
COMMENT ON COLUMN canopy.uploads.content_type IS 'The upload''s Content-Type, sent back on download.';
COMMENT ON COLUMN canopy.uploads.created_at IS 'When the bytes were received.';
COMMENT ON COLUMN canopy.uploads.expires_at IS 'After this the token attaches nothing, and the bytes are the collector''s unless a record holds them.';
COMMENT ON COLUMN canopy.uploads.used_at IS 'When a save attached it; a used token attaches nothing more.';

ALTER TABLE canopy.uploads ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.uploads FORCE ROW LEVEL SECURITY;
