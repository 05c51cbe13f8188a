-- Repeatable SQL (sql/README.md): the functions, triggers, policies and
-- grants now live in sql/, one definition each, and `canopy migrate up`
-- re-applies a file of sql/manifest.txt whenever its checksum changes. This
-- table records what it applied, as canopy.schema_migrations does for the
-- versioned files.
SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.schema_repeatables (
    path        text PRIMARY KEY,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE canopy.schema_repeatables IS 'Applied repeatable files of sql/: path, SHA-256 of its text, when. Written by canopy migrate only.';
COMMENT ON COLUMN canopy.schema_repeatables.path IS 'The file''s path relative to sql/, as sql/manifest.txt lists it, e.g. functions/identity.sql.';
COMMENT ON COLUMN canopy.schema_repeatables.checksum IS 'SHA-256 of the text last applied; a different checksum makes canopy migrate up apply the file again.';
COMMENT ON COLUMN canopy.schema_repeatables.applied_at IS 'When that text was applied.';

-- Like every table: row-level security forced, the owner's policy only. The
-- migrator (an administrator, who bypasses RLS) reads and writes it;
-- canopy_gateway has no privilege on it.
ALTER TABLE canopy.schema_repeatables ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.schema_repeatables FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.schema_repeatables TO canopy_owner USING (true) WITH CHECK (true);
