-- 0025: the public database (issue 36, API.md §15).
--
-- * The public zone: one row of canopy.zones with no owner, named
--   _defaultZone. owner_id becomes nullable for it alone; the queries of the
--   PRIVATE and SHARED scopes compare owner_id with the caller, which a NULL
--   never equals, so they never see it.
-- * Security roles: canopy.security_roles (the schema file's CREATE ROLE)
--   and canopy.role_members (users an operator assigned with
--   `canopy roles add`). The grants of canopy.record_type_grants are now
--   enforced in the public zone by the records and tombstones policies
--   (sql/policies/records.sql, tombstones.sql) through
--   sql/functions/public_grants.sql.
-- * canopy.tombstones.created_by: who created a deleted record, so the
--   public feed shows the deletion of a record only readable by its creator
--   to that creator alone.
-- * canopy.zones.access_changed_seq: a change position at which what callers
--   may read in the zone changed other than through its records (grants or
--   role members, sql/triggers/public_access.sql); a public change token
--   from before it is CHANGE_TOKEN_EXPIRED.
--
-- canopy.membership_derivation (migrations/0014) is replaced: the public
-- zone has no owner, so no membership.

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.zones ALTER COLUMN owner_id DROP NOT NULL;
ALTER TABLE canopy.zones ADD CONSTRAINT zones_public_is_default CHECK (owner_id IS NOT NULL OR name = '_defaultZone');
CREATE UNIQUE INDEX zones_one_public_idx ON canopy.zones ((owner_id IS NULL)) WHERE owner_id IS NULL;
COMMENT ON COLUMN canopy.zones.owner_id IS 'The user who owns the zone and every record in it; NULL for the public database''s one zone.';

ALTER TABLE canopy.zones ADD COLUMN access_changed_seq bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN canopy.zones.access_changed_seq IS 'Public zone: the change position of the last change to grants or role members; a public zone token below it is CHANGE_TOKEN_EXPIRED. 0 elsewhere.';

CREATE OR REPLACE VIEW canopy.membership_derivation WITH (security_invoker = true) AS
SELECT z.owner_id AS user_id, z.id AS zone_id, z.owner_id, NULL::bigint AS share_id, NULL::bigint AS participant_id,
       NULL::bigint AS root_record_id, 'OWNER'::text AS role, true AS can_write
  FROM canopy.zones z
 WHERE z.owner_id IS NOT NULL
UNION ALL
SELECT p.user_id, s.zone_id, z.owner_id, s.id, p.id, s.root_record_id, p.role, p.permission = 'READ_WRITE'
  FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id JOIN canopy.zones z ON z.id = s.zone_id
 WHERE p.status = 'ACCEPTED' AND p.user_id IS NOT NULL;
COMMENT ON VIEW canopy.membership_derivation IS 'What canopy.memberships must hold: a row per owned zone for its owner, a row per ACCEPTED participant with an account.';

-- The zone itself. On an existing database the zones triggers are the
-- versions before this file: zones_membership reads the view above (no
-- row for a zone without owner) and zones_after_insert notifies with an
-- empty payload, which listeners ignore. As the administrator: on a new
-- database canopy_owner's policy comes later, with the repeatable files.
RESET ROLE;
INSERT INTO canopy.zones (owner_id, name) VALUES (NULL, '_defaultZone');
SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.security_roles (
    name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE canopy.security_roles IS 'Custom security roles of the public database (CREATE ROLE in the schema file). _world, _icloud and _creator are built in and not listed.';
COMMENT ON COLUMN canopy.security_roles.name IS 'The role, as GRANT … TO names it.';
COMMENT ON COLUMN canopy.security_roles.created_at IS 'When a schema apply first declared it.';

CREATE TABLE canopy.role_members (
    role_name  text NOT NULL REFERENCES canopy.security_roles (name) ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    added_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (role_name, user_id)
);
CREATE INDEX role_members_user_idx ON canopy.role_members (user_id);
COMMENT ON TABLE canopy.role_members IS 'Users an operator assigned to a custom security role (canopy roles add). Not readable by the gateway; the grant functions read it.';
COMMENT ON COLUMN canopy.role_members.role_name IS 'The role (canopy.security_roles).';
COMMENT ON COLUMN canopy.role_members.user_id IS 'The user given it.';
COMMENT ON COLUMN canopy.role_members.added_at IS 'When.';

ALTER TABLE canopy.security_roles ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.security_roles FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.role_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.role_members FORCE ROW LEVEL SECURITY;

ALTER TABLE canopy.tombstones ADD COLUMN created_by bigint;
COMMENT ON COLUMN canopy.tombstones.created_by IS 'Who created the deleted record (public zone: a type readable by _creator alone shows its deletion to that user only).';

COMMENT ON TABLE canopy.record_type_grants IS 'GRANT clauses of the applied schema file: who may READ, CREATE and WRITE records of each type in the public database (enforced by the records and tombstones policies). A type without rows gets CloudKit''s defaults.';
