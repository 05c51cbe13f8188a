-- Baseline for new installs: the data and structure that archive/0001 to
-- 0011 built, written as their final state; it stands for those eleven
-- files. A new database runs this file, then the versioned migrations after
-- it (0012_repeatable_sql.sql, …), then every repeatable file of sql/ in the
-- order of sql/manifest.txt. A database that already
-- applied some of archive/0001-0011 runs the rest of those instead and never
-- this file.
--
-- It holds no code: functions, trigger functions, triggers, operators,
-- operator classes, policies, function grants and the table grants to
-- canopy_gateway live in sql/ (see sql/README.md). Column order is the order
-- the archive produced (columns added later by ALTER TABLE come last).

-- Roles, schema and extensions. Runs as the administrator that `canopy
-- migrate` connects as (a superuser in the embedded cluster).
--
-- canopy_owner    NOLOGIN. Owns every table and function. Its SECURITY
--                 DEFINER functions are the only code that acts as it.
-- canopy_gateway  LOGIN, NOBYPASSRLS, owns nothing. The role the HTTP gateway
--                 and `canopy psql --as` connect as; it says who is asking
--                 with set_config('canopy.user_id', …, true) and row-level
--                 security decides the rest.
--
-- Roles are cluster-wide and several databases of one cluster may be migrated
-- at once (tests do), so creation tolerates a concurrent creator.

DO $$
BEGIN
    BEGIN
        CREATE ROLE canopy_owner NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
    BEGIN
        CREATE ROLE canopy_gateway LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
    -- Whatever an earlier version or a person did, these roles never bypass
    -- RLS. Altered only when wrong: concurrent ALTERs of one role collide.
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'canopy_owner'
               AND (rolcanlogin OR rolsuper OR rolbypassrls OR rolcreatedb OR rolcreaterole)) THEN
        ALTER ROLE canopy_owner NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'canopy_gateway'
               AND (NOT rolcanlogin OR rolsuper OR rolbypassrls OR rolcreatedb OR rolcreaterole)) THEN
        ALTER ROLE canopy_gateway LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END
$$;

-- The migrator bootstraps the schema (for canopy.schema_migrations) before
-- this file runs; hand it to the owner.
CREATE SCHEMA IF NOT EXISTS canopy;
ALTER SCHEMA canopy OWNER TO canopy_owner;
COMMENT ON SCHEMA canopy IS 'Canopy: CloudKit-style users, zones, records and shares. Row-level security decides what each user sees; see the COMMENT on each table.';

REVOKE ALL ON SCHEMA canopy FROM PUBLIC;
GRANT USAGE ON SCHEMA canopy TO canopy_gateway;

ALTER TABLE canopy.schema_migrations OWNER TO canopy_owner;
ALTER TABLE canopy.schema_migrations ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.schema_migrations FORCE ROW LEVEL SECURITY;

-- btree_gist: the exclusion constraint that keeps zone-wide and
-- record-rooted shares out of the same zone.
CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA public;

-- The change position of every write; see canopy.records.change_seq.
CREATE SEQUENCE canopy.change_seq AS bigint;
ALTER SEQUENCE canopy.change_seq OWNER TO canopy_owner;
COMMENT ON SEQUENCE canopy.change_seq IS 'Position of every record write and deletion. Within one zone, positions are handed out under the zone''s row lock, so they follow commit order there.';

-- The extensions later archive files created, as the administrator.
-- unaccent (archive/0005): `self CONTAINS` matches words whatever their accents.
CREATE EXTENSION IF NOT EXISTS unaccent WITH SCHEMA public;
-- btree_gin (archive/0008): record-type schema indexes.
CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;

-- The tables of API.md §9. Everything created here is owned by canopy_owner.
SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.users (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    record_name text NOT NULL UNIQUE DEFAULT ('_' || replace(gen_random_uuid()::text, '-', ''))
                CHECK (record_name ~ '^_[0-9a-f]{32}$'),
    name        text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.@-]{0,62}$'),
    email       text UNIQUE CHECK (email IS NULL OR (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+$')),
    phone       text UNIQUE CHECK (phone IS NULL OR phone ~ '^\+?[0-9]{3,20}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE canopy.users IS 'Accounts. A user sees their own row and the users of shares they take part in.';
COMMENT ON COLUMN canopy.users.id IS 'Internal id; what canopy.user_id holds.';
COMMENT ON COLUMN canopy.users.record_name IS 'The stable public id (userRecordName), e.g. _3f2a9c….';
COMMENT ON COLUMN canopy.users.name IS 'The handle the CLI names the user by (canopy users add NAME); unique.';
COMMENT ON COLUMN canopy.users.email IS 'Optional, lower case; how share invitations by email find the user.';
COMMENT ON COLUMN canopy.users.phone IS 'Optional, digits with an optional leading +; how share invitations by phone find the user.';
COMMENT ON COLUMN canopy.users.created_at IS 'When the account was created.';

CREATE TABLE canopy.api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    selector     text NOT NULL UNIQUE CHECK (selector ~ '^[0-9a-f]{16}$'),
    secret_hash  bytea NOT NULL CHECK (octet_length(secret_hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_tokens_user_id_idx ON canopy.api_tokens (user_id);
COMMENT ON TABLE canopy.api_tokens IS 'Bearer tokens. A token is cnp_<selector>_<secret>; only the SHA-256 of the secret is stored, never the token.';
COMMENT ON COLUMN canopy.api_tokens.user_id IS 'The user the token authenticates.';
COMMENT ON COLUMN canopy.api_tokens.selector IS 'Public part of the token, used to find the row; not a secret.';
COMMENT ON COLUMN canopy.api_tokens.secret_hash IS 'SHA-256 of the secret part; compared in constant time by the gateway.';
COMMENT ON COLUMN canopy.api_tokens.created_at IS 'When the token was issued.';

CREATE TABLE canopy.zones (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id    bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    name        text NOT NULL CONSTRAINT zones_name_format
                CHECK (name = '_defaultZone' OR name ~ '^[A-Za-z0-9.-][A-Za-z0-9_.-]{0,254}$'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- Change feeds (archive/0007).
    changed_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    tombstones_purged_through bigint NOT NULL DEFAULT 0,
    UNIQUE (owner_id, name)
);
COMMENT ON TABLE canopy.zones IS 'Record zones. Zone id = (name, owner). Visible to the owner and to accepted participants of a share in it.';
COMMENT ON COLUMN canopy.zones.owner_id IS 'The user who owns the zone and every record in it.';
COMMENT ON COLUMN canopy.zones.name IS 'zoneName: 1-255 of [A-Za-z0-9_.-], not starting with _ except the implicit _defaultZone.';
COMMENT ON COLUMN canopy.zones.created_at IS 'When the zone was created.';
CREATE INDEX zones_owner_changed_idx ON canopy.zones (owner_id, changed_xid);
COMMENT ON COLUMN canopy.zones.changed_xid IS 'Transaction id of the last transaction that changed the zone''s records, shares or participants (databaseChanges); written by canopy.touch_zone under the zone''s row lock.';
COMMENT ON COLUMN canopy.zones.tombstones_purged_through IS 'Highest change position of a tombstone purged from this zone; a zone token below it is CHANGE_TOKEN_EXPIRED.';

CREATE TABLE canopy.records (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    zone_id      bigint NOT NULL REFERENCES canopy.zones (id) ON DELETE CASCADE,
    record_name  text NOT NULL CONSTRAINT records_name_length CHECK (char_length(record_name) BETWEEN 1 AND 255),
    record_type  text NOT NULL CONSTRAINT records_type_format CHECK (record_type ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$'),
    fields       jsonb NOT NULL DEFAULT '{}'
                 CONSTRAINT records_fields_object CHECK (jsonb_typeof(fields) = 'object')
                 CONSTRAINT records_fields_size CHECK (octet_length(fields::text) <= 1048576),
    parent_name  text CONSTRAINT records_parent_name_length CHECK (parent_name IS NULL OR char_length(parent_name) BETWEEN 1 AND 255),
    share_id     bigint,
    change_tag   text NOT NULL DEFAULT '',
    change_seq   bigint NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- created_by and modified_by default to canopy.current_user_id(), which is
    -- code: the default is set by sql/functions/identity.sql.
    created_by   bigint REFERENCES canopy.users (id) ON DELETE SET NULL,
    modified_at  timestamptz NOT NULL DEFAULT now(),
    modified_by  bigint REFERENCES canopy.users (id) ON DELETE SET NULL,
    -- Who saved, as userRecordNames (archive/0005), so a record can be shown
    -- with its stamps to anyone who may read it, without reading users.
    created_by_name   text,
    modified_by_name  text,
    UNIQUE (zone_id, record_name),
    UNIQUE (id, zone_id)
);
CREATE INDEX records_zone_type_name_idx ON canopy.records (zone_id, record_type, record_name COLLATE "C");
CREATE INDEX records_zone_parent_idx ON canopy.records (zone_id, parent_name) WHERE parent_name IS NOT NULL;
CREATE INDEX records_share_idx ON canopy.records (share_id) WHERE share_id IS NOT NULL;
CREATE INDEX records_zone_change_idx ON canopy.records (zone_id, change_seq);
-- Equality and containment on fields (fields @> '{"k": v}') (archive/0005).
CREATE INDEX records_fields_idx ON canopy.records USING gin (fields jsonb_path_ops);
COMMENT ON TABLE canopy.records IS 'Records. Visible to the zone owner, to accepted participants of a zone-wide share of the zone, and to accepted participants of the record-rooted share in share_id.';
COMMENT ON COLUMN canopy.records.zone_id IS 'The zone; its owner owns the record, whoever created it.';
COMMENT ON COLUMN canopy.records.record_name IS 'recordName, unique in the zone, 1-255 characters; never changes.';
COMMENT ON COLUMN canopy.records.record_type IS 'recordType, e.g. Contact.';
COMMENT ON COLUMN canopy.records.fields IS 'The record''s fields as a JSON object (API.md §4); at most 1 MB.';
COMMENT ON COLUMN canopy.records.parent_name IS 'recordName of the parent in the same zone, or NULL. May dangle after the parent is deleted.';
COMMENT ON COLUMN canopy.records.share_id IS 'The record-rooted share whose hierarchy holds this record, kept up to date by triggers (canopy.records_before_write, canopy.propagate_share) so that a read never walks the parent chain. NULL outside record-rooted shares.';
COMMENT ON COLUMN canopy.records.change_tag IS 'recordChangeTag: changes on every save; set by trigger.';
COMMENT ON COLUMN canopy.records.change_seq IS 'Position of the last write in the change feed (canopy.change_seq), taken under the zone''s row lock; set by trigger.';
COMMENT ON COLUMN canopy.records.created_at IS 'created.timestamp.';
COMMENT ON COLUMN canopy.records.created_by IS 'created.userRecordName: who created it (a participant, for records added to a shared zone).';
COMMENT ON COLUMN canopy.records.modified_at IS 'modified.timestamp; set by trigger.';
COMMENT ON COLUMN canopy.records.modified_by IS 'modified.userRecordName; set by trigger.';
COMMENT ON COLUMN canopy.records.created_by_name IS 'created.userRecordName; set by trigger.';
COMMENT ON COLUMN canopy.records.modified_by_name IS 'modified.userRecordName; set by trigger.';

CREATE TABLE canopy.shares (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    zone_id            bigint NOT NULL REFERENCES canopy.zones (id) ON DELETE CASCADE,
    root_record_id     bigint,
    kind               text GENERATED ALWAYS AS (CASE WHEN root_record_id IS NULL THEN 'zone' ELSE 'record' END) STORED,
    url_token          text NOT NULL UNIQUE
                       DEFAULT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
                       CONSTRAINT shares_url_token_strength CHECK (url_token ~ '^[0-9A-Za-z_-]{32,}$'),
    title              text CHECK (title IS NULL OR char_length(title) <= 1024),
    public_permission  text NOT NULL DEFAULT 'NONE' CHECK (public_permission IN ('NONE', 'READ_ONLY', 'READ_WRITE')),
    participant_count  integer NOT NULL DEFAULT 0
                       CONSTRAINT shares_participant_limit CHECK (participant_count BETWEEN 0 AND 100),
    created_at         timestamptz NOT NULL DEFAULT now(),
    modified_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (root_record_id, zone_id) REFERENCES canopy.records (id, zone_id) ON DELETE CASCADE,
    CONSTRAINT shares_one_kind_per_zone EXCLUDE USING gist (zone_id WITH =, kind WITH <>)
);
CREATE UNIQUE INDEX shares_one_zone_wide_per_zone ON canopy.shares (zone_id) WHERE root_record_id IS NULL;
CREATE UNIQUE INDEX shares_one_per_root ON canopy.shares (root_record_id) WHERE root_record_id IS NOT NULL;
ALTER TABLE canopy.records ADD FOREIGN KEY (share_id) REFERENCES canopy.shares (id) ON DELETE SET NULL;
COMMENT ON TABLE canopy.shares IS 'CKShare: zone-wide (root_record_id NULL) or rooted at a record. At most one zone-wide share per zone, never both kinds in one zone. Visible to the zone owner and its accepted participants; changed only by the owner.';
COMMENT ON COLUMN canopy.shares.zone_id IS 'The shared zone (never a _defaultZone).';
COMMENT ON COLUMN canopy.shares.root_record_id IS 'The root record of a record-rooted share; NULL for a zone-wide share. Deleting the root deletes the share.';
COMMENT ON COLUMN canopy.shares.kind IS 'zone or record; derived from root_record_id.';
COMMENT ON COLUMN canopy.shares.url_token IS 'The unguessable token in the share URL (<public url>/share/<token>); 244 random bits. A re-created share gets a new one.';
COMMENT ON COLUMN canopy.shares.title IS 'Optional title shown with the share.';
COMMENT ON COLUMN canopy.shares.public_permission IS 'NONE: invited users only. READ_ONLY / READ_WRITE: anyone with the URL may join as PUBLIC_USER with that permission.';
COMMENT ON COLUMN canopy.shares.participant_count IS 'Participants other than the owner and not REMOVED; kept by trigger, at most 100.';
COMMENT ON COLUMN canopy.shares.created_at IS 'When the share was created.';
COMMENT ON COLUMN canopy.shares.modified_at IS 'When the share was last changed.';

CREATE TABLE canopy.participants (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    share_id     bigint NOT NULL REFERENCES canopy.shares (id) ON DELETE CASCADE,
    user_id      bigint REFERENCES canopy.users (id) ON DELETE CASCADE,
    email        text CHECK (email IS NULL OR email = lower(email)),
    phone        text,
    role         text NOT NULL DEFAULT 'PRIVATE_USER' CHECK (role IN ('OWNER', 'ADMINISTRATOR', 'PRIVATE_USER', 'PUBLIC_USER')),
    permission   text NOT NULL CHECK (permission IN ('READ_ONLY', 'READ_WRITE')),
    status       text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'ACCEPTED', 'REMOVED')),
    invited_at   timestamptz NOT NULL DEFAULT now(),
    accepted_at  timestamptz,
    CONSTRAINT participants_identified CHECK (user_id IS NOT NULL OR email IS NOT NULL OR phone IS NOT NULL),
    CONSTRAINT participants_public_is_user CHECK (role <> 'PUBLIC_USER' OR user_id IS NOT NULL),
    CONSTRAINT participants_owner_is_user CHECK (role <> 'OWNER' OR (user_id IS NOT NULL AND status = 'ACCEPTED' AND permission = 'READ_WRITE'))
);
CREATE UNIQUE INDEX participants_share_user ON canopy.participants (share_id, user_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX participants_share_email ON canopy.participants (share_id, email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX participants_share_phone ON canopy.participants (share_id, phone) WHERE phone IS NOT NULL;
CREATE UNIQUE INDEX participants_one_owner ON canopy.participants (share_id) WHERE role = 'OWNER';
CREATE INDEX participants_user_idx ON canopy.participants (user_id, status);
COMMENT ON TABLE canopy.participants IS 'Share participants. The owner and accepted administrators see every row of their share; other accepted participants see the owner''s row and their own; PENDING and REMOVED see nothing.';
COMMENT ON COLUMN canopy.participants.share_id IS 'The share.';
COMMENT ON COLUMN canopy.participants.user_id IS 'The participant''s account; NULL while an email or phone invitation has not been accepted.';
COMMENT ON COLUMN canopy.participants.email IS 'Invited email (lower case), if invited by email.';
COMMENT ON COLUMN canopy.participants.phone IS 'Invited phone, if invited by phone.';
COMMENT ON COLUMN canopy.participants.role IS 'OWNER (one, the zone owner), ADMINISTRATOR (manages PRIVATE_USERs), PRIVATE_USER (invited), PUBLIC_USER (joined by URL).';
COMMENT ON COLUMN canopy.participants.permission IS 'READ_ONLY or READ_WRITE on the share''s records.';
COMMENT ON COLUMN canopy.participants.status IS 'PENDING until accepted; ACCEPTED grants access; REMOVED (removed or left) grants nothing and cannot accept again until re-added.';
COMMENT ON COLUMN canopy.participants.invited_at IS 'When the participant was added.';
COMMENT ON COLUMN canopy.participants.accepted_at IS 'When the participant accepted, if they did.';

CREATE TABLE canopy.tombstones (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    zone_id      bigint NOT NULL REFERENCES canopy.zones (id) ON DELETE CASCADE,
    record_name  text NOT NULL,
    record_type  text NOT NULL,
    share_id     bigint,
    change_seq   bigint NOT NULL,
    deleted_at   timestamptz NOT NULL DEFAULT now(),
    deleted_by   bigint,
    kind         text NOT NULL DEFAULT 'deleted' CONSTRAINT tombstones_kind CHECK (kind IN ('deleted', 'left_share'))
);
CREATE INDEX tombstones_zone_change_idx ON canopy.tombstones (zone_id, change_seq);
CREATE INDEX tombstones_deleted_at_idx ON canopy.tombstones (deleted_at);
COMMENT ON TABLE canopy.tombstones IS 'Deleted records, for change feeds (zoneChanges since a token). Purged after the retention period. Visible to whoever could see the record.';
COMMENT ON COLUMN canopy.tombstones.zone_id IS 'The zone the record was in.';
COMMENT ON COLUMN canopy.tombstones.record_name IS 'recordName of the deleted record.';
COMMENT ON COLUMN canopy.tombstones.record_type IS 'recordType of the deleted record.';
COMMENT ON COLUMN canopy.tombstones.share_id IS 'The record-rooted share the record was in when deleted, if any.';
COMMENT ON COLUMN canopy.tombstones.change_seq IS 'Position of the deletion in the change feed.';
COMMENT ON COLUMN canopy.tombstones.deleted_at IS 'When it was deleted.';
COMMENT ON COLUMN canopy.tombstones.deleted_by IS 'canopy.users.id of who deleted it.';
COMMENT ON COLUMN canopy.tombstones.kind IS 'deleted: the record was deleted. left_share: the record moved out of the record-rooted share in share_id (a participant of that share sees it as deleted).';

COMMENT ON TABLE canopy.schema_migrations IS 'Applied migrations: file name, SHA-256 of its text, when. Written by canopy migrate only.';

-- Row-level security is on, and forced, for every table (archive/0004 and
-- later). The policies are code: sql/policies/<table>.sql.
ALTER TABLE canopy.users ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.users FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.api_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.api_tokens FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.zones ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.zones FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.records ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.records FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.shares FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.participants ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.participants FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.tombstones FORCE ROW LEVEL SECURITY;
-- canopy.schema_migrations has no policy: nobody but the migrator (an
-- administrator, who bypasses RLS) reads or writes it.

-- Field types fixed at first save (API.md §4; archive/0005), with the
-- declarations of record-type schemas (archive/0008).
CREATE TABLE canopy.field_types (
    record_type  text NOT NULL CHECK (record_type ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$'),
    field_name   text NOT NULL CONSTRAINT field_types_field_name_check
                 CHECK (field_name ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$' OR field_name IN ('___recordID', '___createTime', '___modTime', '___createdBy', '___modifiedBy', '___etag')),
    field_type   text NOT NULL CONSTRAINT field_types_field_type_check
                 CHECK (field_type ~ '^(LIST<)?(STRING|INT64|DOUBLE|BOOLEAN|TIMESTAMP|REFERENCE|LOCATION|BYTES|ASSET)>?$'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- Declared fields' indexes (archive/0008).
    queryable    boolean NOT NULL DEFAULT false,
    sortable     boolean NOT NULL DEFAULT false,
    searchable   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (record_type, field_name)
);
COMMENT ON TABLE canopy.field_types IS 'The schema: each record type''s field types, fixed by the first save of a field (CloudKit''s just-in-time schema). Readable by every user, like a CloudKit container''s schema.';
COMMENT ON COLUMN canopy.field_types.record_type IS 'recordType.';
COMMENT ON COLUMN canopy.field_types.field_name IS 'Field name, or one of CloudKit''s system fields (___recordID, ___createTime, ___modTime, ___createdBy, ___modifiedBy, ___etag) when a schema file declares them.';
COMMENT ON COLUMN canopy.field_types.field_type IS 'STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP, REFERENCE, LOCATION, BYTES, ASSET, or LIST<one of those>.';
COMMENT ON COLUMN canopy.field_types.created_at IS 'When the first save fixed it.';
COMMENT ON COLUMN canopy.field_types.queryable IS 'QUERYABLE: filters on the field run on an index (canopy schema apply builds it); required in production mode.';
COMMENT ON COLUMN canopy.field_types.sortable IS 'SORTABLE: sorts and range filters on the field run on an index; sorts require it in production mode.';
COMMENT ON COLUMN canopy.field_types.searchable IS 'SEARCHABLE: the field''s words are what self CONTAINS matches, on a full-text index.';
ALTER TABLE canopy.field_types ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.field_types FORCE ROW LEVEL SECURITY;

-- Secrets the gateway signs cursors (and later change tokens) with, kept in
-- the database so every gateway process agrees. Created on first use from a
-- candidate the caller generated; nobody reads the table directly.
CREATE TABLE canopy.server_secrets (
    name        text PRIMARY KEY,
    secret      bytea NOT NULL CHECK (octet_length(secret) >= 32),
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE canopy.server_secrets IS 'Keys for signing cursors and change tokens; read only through canopy.server_secret().';
COMMENT ON COLUMN canopy.server_secrets.name IS 'What the key signs, e.g. cursor.';
COMMENT ON COLUMN canopy.server_secrets.secret IS 'At least 256 random bits.';
COMMENT ON COLUMN canopy.server_secrets.created_at IS 'When it was made.';
ALTER TABLE canopy.server_secrets ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.server_secrets FORCE ROW LEVEL SECURITY;

-- Changes in what a user sees of a zone other than through its records:
-- the zone deleted (its owner, PRIVATE), no longer shared with them
-- (SHARED: share deleted, removed, left), or a share in it accepted (SHARED:
-- they see more of it). Rows are per user and written by trigger only.
CREATE TABLE canopy.zone_departures (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id            bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    scope              text NOT NULL CHECK (scope IN ('PRIVATE', 'SHARED')),
    zone_id            bigint NOT NULL,
    zone_name          text NOT NULL,
    owner_id           bigint NOT NULL,
    owner_record_name  text NOT NULL,
    change_xid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    change_seq         bigint NOT NULL,
    departed_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX zone_departures_user_idx ON canopy.zone_departures (user_id, scope, change_xid);
CREATE INDEX zone_departures_zone_idx ON canopy.zone_departures (zone_id, user_id, change_seq);
CREATE INDEX zone_departures_departed_at_idx ON canopy.zone_departures (departed_at);
COMMENT ON TABLE canopy.zone_departures IS 'Changes in what a user sees of a zone other than through its records: stopped seeing it (databaseChanges.deletedZones) or, in SHARED scope, accepted a share in it. Either expires the user''s older tokens for the zone. Visible to that user only; purged after the retention period.';
COMMENT ON COLUMN canopy.zone_departures.user_id IS 'Who stopped seeing the zone.';
COMMENT ON COLUMN canopy.zone_departures.scope IS 'PRIVATE: the owner deleted the zone. SHARED: a participant lost access (share deleted, removed, left, zone deleted) or accepted a share in it.';
COMMENT ON COLUMN canopy.zone_departures.zone_id IS 'The zone (which may no longer exist).';
COMMENT ON COLUMN canopy.zone_departures.zone_name IS 'Its zoneName, kept because the zone may be gone.';
COMMENT ON COLUMN canopy.zone_departures.owner_id IS 'Its owner.';
COMMENT ON COLUMN canopy.zone_departures.owner_record_name IS 'Its owner''s userRecordName (ownerName).';
COMMENT ON COLUMN canopy.zone_departures.change_xid IS 'The departing transaction, for database tokens.';
COMMENT ON COLUMN canopy.zone_departures.change_seq IS 'A position in the zone''s feed: a zone token from before it no longer describes what the user sees (CHANGE_TOKEN_EXPIRED).';
COMMENT ON COLUMN canopy.zone_departures.departed_at IS 'When; for the retention period.';

-- Cluster-wide state of the feeds.
CREATE TABLE canopy.feed_state (
    singleton                   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    departures_purged_before    timestamptz
);
INSERT INTO canopy.feed_state DEFAULT VALUES;
COMMENT ON TABLE canopy.feed_state IS 'One row: what the purge has removed from the feeds.';
COMMENT ON COLUMN canopy.feed_state.singleton IS 'Always true: the table has one row.';
COMMENT ON COLUMN canopy.feed_state.departures_purged_before IS 'Zone departures from before this time have been purged; a database token read before it is CHANGE_TOKEN_EXPIRED. NULL: none purged yet.';

ALTER TABLE canopy.zone_departures ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.zone_departures FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.feed_state ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.feed_state FORCE ROW LEVEL SECURITY;

-- Grants as the schema file states them (GRANT READ TO "_world"), kept so
-- that `canopy schema export` gives them back. Canopy has no public
-- database: who reads what is decided by zones and shares, not by these.
CREATE TABLE canopy.record_type_grants (
    record_type text NOT NULL CHECK (record_type ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$'),
    privilege   text NOT NULL CHECK (privilege IN ('READ', 'WRITE', 'CREATE')),
    role_name   text NOT NULL CHECK (length(role_name) BETWEEN 1 AND 255),
    position    int NOT NULL,
    PRIMARY KEY (record_type, privilege, role_name)
);
COMMENT ON TABLE canopy.record_type_grants IS 'GRANT clauses of the applied schema file, kept for export; not enforced (zones and shares decide access).';
COMMENT ON COLUMN canopy.record_type_grants.record_type IS 'recordType.';
COMMENT ON COLUMN canopy.record_type_grants.privilege IS 'READ, WRITE or CREATE.';
COMMENT ON COLUMN canopy.record_type_grants.role_name IS 'The security role named, e.g. _world, _icloud, _creator.';
COMMENT ON COLUMN canopy.record_type_grants.position IS 'Order within the record type, as written.';
ALTER TABLE canopy.record_type_grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.record_type_grants FORCE ROW LEVEL SECURITY;

-- The indexes `canopy schema apply` keeps on canopy.records. A row is
-- written before its index is built, so an apply that stops half-way
-- leaves a row whose index is missing or invalid, and the next apply
-- builds it again.
CREATE TABLE canopy.schema_indexes (
    index_name  text PRIMARY KEY CHECK (index_name ~ '^records_schema_[0-9a-f]{16}$'),
    record_type text NOT NULL,
    field_name  text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('btree', 'search', 'list')),
    definition  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (record_type, field_name, kind)
);
COMMENT ON TABLE canopy.schema_indexes IS 'Indexes on canopy.records that canopy schema apply built for QUERYABLE, SORTABLE and SEARCHABLE fields.';
COMMENT ON COLUMN canopy.schema_indexes.index_name IS 'records_schema_ and 16 hex digits of the definition''s hash.';
COMMENT ON COLUMN canopy.schema_indexes.record_type IS 'recordType.';
COMMENT ON COLUMN canopy.schema_indexes.field_name IS 'Field (or system field) indexed; for search, the first SEARCHABLE field.';
COMMENT ON COLUMN canopy.schema_indexes.kind IS 'btree (QUERYABLE, SORTABLE), list (a QUERYABLE LIST<STRING> or LIST<REFERENCE>, for CONTAINS) or search (SEARCHABLE, one per record type over all its SEARCHABLE fields).';
COMMENT ON COLUMN canopy.schema_indexes.definition IS 'The CREATE INDEX statement, without CONCURRENTLY.';
COMMENT ON COLUMN canopy.schema_indexes.created_at IS 'When apply first asked for it.';
ALTER TABLE canopy.schema_indexes ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.schema_indexes FORCE ROW LEVEL SECURITY;

-- Functions: nobody executes them unless granted (the grants are in sql/).
ALTER DEFAULT PRIVILEGES FOR ROLE canopy_owner IN SCHEMA canopy REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
