-- 0032: storage quotas (issue 53, part 2). Every user's stored bytes, kept
-- by the database in the same transaction as the write that changes them
-- (sql/functions/storage.sql, sql/triggers/storage.sql), and the quota
-- they are checked against: canopy.storage_quota_default for everybody,
-- canopy.storage_usage.quota_bytes for one user. Both under forced
-- row-level security with no privilege for canopy_gateway: usage moves
-- only through the triggers, quotas only through an administrator
-- (`canopy quotas set`), and a user reads their own through
-- canopy.my_storage() (docs/QUOTAS.md).
SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.storage_quota_default (
    only_row     boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    quota_bytes  bigint CHECK (quota_bytes IS NULL OR quota_bytes >= 0)
);
COMMENT ON TABLE canopy.storage_quota_default IS 'The storage quota of every user without one of their own (one row). Change with `canopy quotas set --default`.';
COMMENT ON COLUMN canopy.storage_quota_default.only_row IS 'Always true: the table has one row.';
COMMENT ON COLUMN canopy.storage_quota_default.quota_bytes IS 'Bytes a user may store; NULL: no limit.';

CREATE TABLE canopy.storage_usage (
    user_id       bigint PRIMARY KEY REFERENCES canopy.users (id) ON DELETE CASCADE,
    record_count  bigint NOT NULL DEFAULT 0 CHECK (record_count >= 0),
    field_bytes   bigint NOT NULL DEFAULT 0 CHECK (field_bytes >= 0),
    asset_bytes   bigint NOT NULL DEFAULT 0 CHECK (asset_bytes >= 0),
    quota_bytes   bigint CHECK (quota_bytes IS NULL OR quota_bytes >= 0),
    has_quota     boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE canopy.storage_usage IS 'Each user''s stored bytes, charged as CloudKit charges them: a record to its zone''s owner (a shared zone''s records to the sharer), a public record to its creator. Kept by the records triggers in the writing transaction.';
COMMENT ON COLUMN canopy.storage_usage.user_id IS 'Who is charged.';
COMMENT ON COLUMN canopy.storage_usage.record_count IS 'Records charged to the user.';
COMMENT ON COLUMN canopy.storage_usage.field_bytes IS 'Sum over those records of their fields'' JSON length in bytes (octet_length(fields::text)).';
COMMENT ON COLUMN canopy.storage_usage.asset_bytes IS 'Sum over those records of the sizes of the assets they hold (an asset held by two records is charged twice, as in CloudKit).';
COMMENT ON COLUMN canopy.storage_usage.quota_bytes IS 'This user''s own quota when has_quota (NULL then: no limit); otherwise ignored and canopy.storage_quota_default applies.';
COMMENT ON COLUMN canopy.storage_usage.has_quota IS 'Whether quota_bytes is this user''s own quota rather than the default.';

-- Uploads not yet attached count against their uploader's quota while they
-- are live; this index finds them without reading every upload ever made.
CREATE INDEX uploads_pending_idx ON canopy.uploads (user_id, expires_at) WHERE used_at IS NULL;

ALTER TABLE canopy.storage_quota_default ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.storage_quota_default FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.storage_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.storage_usage FORCE ROW LEVEL SECURITY;
-- The policies that let canopy_owner's functions write them are in
-- sql/policies/storage.sql. The default below is written as the
-- administrator (a superuser), before those exist.
RESET ROLE;

-- 1 GiB on a new database; none on one that already holds records, so an
-- upgrade never starts refusing writes by itself (`canopy quotas set
-- --default SIZE` sets one; docs/QUOTAS.md).
INSERT INTO canopy.storage_quota_default (quota_bytes)
VALUES (CASE WHEN EXISTS (SELECT 1 FROM canopy.records) THEN NULL ELSE 1073741824 END);

-- What is stored already is counted by sql/triggers/storage.sql, in the
-- transaction that installs the triggers, under a lock on the records: no
-- write can fall between the count and the triggers.
