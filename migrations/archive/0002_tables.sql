-- The tables of API.md §9. Everything created here is owned by canopy_owner.
SET LOCAL ROLE canopy_owner;

-- Who is asking: the gateway sets canopy.user_id inside each request's
-- transaction (set_config(..., true)); `canopy psql --as` sets it for a
-- session. NULL when nobody is.
CREATE FUNCTION canopy.current_user_id() RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$ SELECT nullif(current_setting('canopy.user_id', true), '')::bigint $$;
COMMENT ON FUNCTION canopy.current_user_id() IS 'The canopy.users.id the current transaction acts for, from set_config(''canopy.user_id'', …, true); NULL for nobody.';

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
    UNIQUE (owner_id, name)
);
COMMENT ON TABLE canopy.zones IS 'Record zones. Zone id = (name, owner). Visible to the owner and to accepted participants of a share in it.';
COMMENT ON COLUMN canopy.zones.owner_id IS 'The user who owns the zone and every record in it.';
COMMENT ON COLUMN canopy.zones.name IS 'zoneName: 1-255 of [A-Za-z0-9_.-], not starting with _ except the implicit _defaultZone.';
COMMENT ON COLUMN canopy.zones.created_at IS 'When the zone was created.';

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
    created_by   bigint REFERENCES canopy.users (id) ON DELETE SET NULL DEFAULT canopy.current_user_id(),
    modified_at  timestamptz NOT NULL DEFAULT now(),
    modified_by  bigint REFERENCES canopy.users (id) ON DELETE SET NULL DEFAULT canopy.current_user_id(),
    UNIQUE (zone_id, record_name),
    UNIQUE (id, zone_id)
);
CREATE INDEX records_zone_type_name_idx ON canopy.records (zone_id, record_type, record_name COLLATE "C");
CREATE INDEX records_zone_parent_idx ON canopy.records (zone_id, parent_name) WHERE parent_name IS NOT NULL;
CREATE INDEX records_share_idx ON canopy.records (share_id) WHERE share_id IS NOT NULL;
CREATE INDEX records_zone_change_idx ON canopy.records (zone_id, change_seq);
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
    deleted_by   bigint
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

COMMENT ON TABLE canopy.schema_migrations IS 'Applied migrations: file name, SHA-256 of its text, when. Written by canopy migrate only.';
