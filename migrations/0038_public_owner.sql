-- 0038: the public zone's owner is user 0 (issue 67; DECISIONS 148, 155).
--
-- On Citus every zone-scoped table is distributed by its zone's owner, and a
-- distribution value cannot be NULL; the public database's one zone had no
-- owner (migrations/0025). It is now owned by a reserved account, user 0,
-- on both engines, so one schema serves both:
--
-- * canopy.users gets the row (0, '_00000000000000000000000000000000',
--   '_public'). Its name is one no account can take (a name starts with a
--   letter or digit), it has no email, phone, identity, token or role, and
--   sql/triggers/users.sql refuses to change or delete it. Every lookup of
--   users by name, record name, email or phone leaves it out (the sharing
--   functions' canopy.user_for_contact and canopy.discover_user, the users
--   policy, the CLI's UserAdmin.find; DECISIONS 155), and the tables of what
--   an account holds (tokens, identities, server keys, roles, uploads, push
--   devices) refuse it by CHECK, so nobody can act as it.
-- * canopy.zones.owner_id is NOT NULL again; the public zone is the zone of
--   owner 0 (at most one: UNIQUE (owner_id, name) and its CHECK), so
--   zones_one_public_idx goes.
-- * canopy.membership_derivation leaves owner 0 out as it left out NULL:
--   nobody is a member of the public zone; its grants decide
--   (sql/functions/public_grants.sql).
--
-- The queries that said `owner_id IS NULL` say `owner_id = 0` (sql/ and the
-- planner, in the same commit).

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.users DROP CONSTRAINT users_name_check;
ALTER TABLE canopy.users ADD CONSTRAINT users_name_check
    CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.@-]{0,62}$' OR (id = 0 AND name = '_public'));
COMMENT ON COLUMN canopy.users.name IS 'The handle the CLI names the user by (canopy users add NAME); unique. _public is user 0, the public zone''s reserved owner.';

CREATE OR REPLACE VIEW canopy.membership_derivation WITH (security_invoker = true) AS
SELECT z.owner_id AS user_id, z.id AS zone_id, z.owner_id, NULL::bigint AS share_id, NULL::bigint AS participant_id,
       NULL::bigint AS root_record_id, 'OWNER'::text AS role, true AS can_write
  FROM canopy.zones z
 WHERE z.owner_id <> 0
UNION ALL
SELECT p.user_id, s.zone_id, z.owner_id, s.id, p.id, s.root_record_id, p.role, p.permission = 'READ_WRITE'
  FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id JOIN canopy.zones z ON z.id = s.zone_id
 WHERE p.status = 'ACCEPTED' AND p.user_id IS NOT NULL;
COMMENT ON VIEW canopy.membership_derivation IS 'What canopy.memberships must hold: a row per owned zone for its owner (not the public zone''s owner 0), a row per ACCEPTED participant with an account.';

-- As the administrator, as 0025 inserted the zone: on a new database
-- canopy_owner's policies come later, with the repeatable files. With
-- triggers off: a database upgraded from before sql/ was repeatable still
-- has the old users_default_zone trigger here (sql/triggers/users.sql
-- drops it after the migrations), which would give user 0 a second
-- _defaultZone; nothing else of users or zones fires on these statements.
RESET ROLE;
SET LOCAL session_replication_role = replica;
INSERT INTO canopy.users (id, record_name, name) OVERRIDING SYSTEM VALUE
VALUES (0, '_00000000000000000000000000000000', '_public');
UPDATE canopy.zones SET owner_id = 0 WHERE owner_id IS NULL;
SET LOCAL session_replication_role = origin;
SET LOCAL ROLE canopy_owner;

DROP INDEX canopy.zones_one_public_idx;
ALTER TABLE canopy.zones DROP CONSTRAINT zones_public_is_default;
ALTER TABLE canopy.zones ADD CONSTRAINT zones_public_is_default CHECK (owner_id <> 0 OR name = '_defaultZone');
ALTER TABLE canopy.zones ALTER COLUMN owner_id SET NOT NULL;
COMMENT ON COLUMN canopy.zones.owner_id IS 'The user who owns the zone and every record in it; 0 (the reserved user _public) for the public database''s one zone.';

-- Nothing an account holds can be user 0's: nobody signs in or acts as it.
ALTER TABLE canopy.api_tokens ADD CONSTRAINT api_tokens_not_public_owner CHECK (user_id <> 0);
ALTER TABLE canopy.identities ADD CONSTRAINT identities_not_public_owner CHECK (user_id <> 0);
ALTER TABLE canopy.server_keys ADD CONSTRAINT server_keys_not_public_owner CHECK (user_id <> 0);
ALTER TABLE canopy.role_members ADD CONSTRAINT role_members_not_public_owner CHECK (user_id <> 0);
ALTER TABLE canopy.uploads ADD CONSTRAINT uploads_not_public_owner CHECK (user_id <> 0);
ALTER TABLE canopy.push_devices ADD CONSTRAINT push_devices_not_public_owner CHECK (user_id <> 0);
