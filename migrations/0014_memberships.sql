-- Memberships (issue 18, goal 3): who may reach which zone, kept by triggers
-- in one table that the row-level security policies read with one index
-- probe per row, instead of recomputing the caller's memberships (joining
-- participants and shares) in every statement. With the arrays of
-- policy_helpers.sql, a participant who had accepted 1,000 shares read one
-- shared record 13 times slower than the zone's owner (docs/BENCHMARK_NOTES.md).
--
-- Structure and its first filling only. The triggers that keep it
-- (zones_membership, participants_membership) and canopy.rebuild_memberships()
-- are in sql/triggers/memberships.sql; its policies in
-- sql/policies/memberships.sql; the policies that read it in
-- sql/policies/records.sql, tombstones.sql, zones.sql and users.sql.
SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.memberships (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    zone_id         bigint NOT NULL REFERENCES canopy.zones (id) ON DELETE CASCADE,
    owner_id        bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    share_id        bigint REFERENCES canopy.shares (id) ON DELETE CASCADE,
    participant_id  bigint UNIQUE REFERENCES canopy.participants (id) ON DELETE CASCADE,
    root_record_id  bigint,
    role            text NOT NULL CHECK (role IN ('OWNER', 'ADMINISTRATOR', 'PRIVATE_USER', 'PUBLIC_USER')),
    can_write       boolean NOT NULL,
    CONSTRAINT memberships_zone_or_share CHECK ((share_id IS NULL) = (participant_id IS NULL)),
    CONSTRAINT memberships_zone_is_owner CHECK (share_id IS NOT NULL OR (role = 'OWNER' AND user_id = owner_id AND can_write))
);
CREATE UNIQUE INDEX memberships_zone_owner ON canopy.memberships (zone_id) WHERE share_id IS NULL;
CREATE INDEX memberships_user_zone ON canopy.memberships (user_id, zone_id) INCLUDE (share_id, root_record_id, can_write);
CREATE INDEX memberships_user_share ON canopy.memberships (user_id, share_id) INCLUDE (role);
CREATE INDEX memberships_user_owner ON canopy.memberships (user_id, owner_id);
CREATE INDEX memberships_share_idx ON canopy.memberships (share_id);
COMMENT ON TABLE canopy.memberships IS 'Who may reach which zone, derived from zones and participants by triggers (never written by the gateway): a row per zone for its owner, and a row per ACCEPTED participant of a share who has an account. Read by the row-level security policies, one index probe a row.';
COMMENT ON COLUMN canopy.memberships.user_id IS 'Who has the access.';
COMMENT ON COLUMN canopy.memberships.zone_id IS 'The zone reached: all of it when root_record_id is NULL, else the records of share_id.';
COMMENT ON COLUMN canopy.memberships.owner_id IS 'The zone''s owner (so "the owner of a zone I joined" is one probe).';
COMMENT ON COLUMN canopy.memberships.share_id IS 'The share accepted; NULL on the zone owner''s own row.';
COMMENT ON COLUMN canopy.memberships.participant_id IS 'The participant row this one mirrors; NULL on the zone owner''s own row.';
COMMENT ON COLUMN canopy.memberships.root_record_id IS 'The root record of a record-rooted share; NULL: the whole zone.';
COMMENT ON COLUMN canopy.memberships.role IS 'The participant''s role; OWNER on the zone owner''s rows.';
COMMENT ON COLUMN canopy.memberships.can_write IS 'READ_WRITE permission (always true for the owner).';

-- What the table must hold, derived from zones and participants: the one
-- definition of a membership, read by the triggers that keep the table
-- (one zone or participant at a time), by canopy.rebuild_memberships() and
-- by the tests that compare the two.
CREATE VIEW canopy.membership_derivation WITH (security_invoker = true) AS
SELECT z.owner_id AS user_id, z.id AS zone_id, z.owner_id, NULL::bigint AS share_id, NULL::bigint AS participant_id,
       NULL::bigint AS root_record_id, 'OWNER'::text AS role, true AS can_write
  FROM canopy.zones z
UNION ALL
SELECT p.user_id, s.zone_id, z.owner_id, s.id, p.id, s.root_record_id, p.role, p.permission = 'READ_WRITE'
  FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id JOIN canopy.zones z ON z.id = s.zone_id
 WHERE p.status = 'ACCEPTED' AND p.user_id IS NOT NULL;
COMMENT ON VIEW canopy.membership_derivation IS 'What canopy.memberships must hold: a row per zone for its owner, a row per ACCEPTED participant with an account.';

-- The first filling (before row-level security is on: its policies come
-- with the repeatable files).
INSERT INTO canopy.memberships (user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write)
SELECT user_id, zone_id, owner_id, share_id, participant_id, root_record_id, role, can_write FROM canopy.membership_derivation;

-- users_select now probes memberships and calls canopy.shares_managed_with()
-- (sql/policies/users.sql, re-applied after this file); the function it
-- called, which gathered every visible user per statement, goes.
DROP POLICY IF EXISTS users_select ON canopy.users;
DROP FUNCTION IF EXISTS canopy.visible_user_ids();

ALTER TABLE canopy.memberships ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.memberships FORCE ROW LEVEL SECURITY;
