-- 0022: server secrets that rotate with an overlap window (issue 35, part 3;
-- `canopy secrets rotate NAME`, docs/SECURITY.md "Rotating the server's
-- secrets"). A rotated key is renamed `<name>@rotated:<n>` and keeps being
-- accepted until `accepted_until`; after that it is recognised as the
-- server's own but old, like a key `canopy restore` retired. The functions
-- that read and rotate (server_secret, rotate_server_secret,
-- accepted_server_secrets, retired_server_secrets) are in
-- sql/functions/server_secrets.sql.

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.server_secrets ADD COLUMN accepted_until timestamptz;
COMMENT ON COLUMN canopy.server_secrets.accepted_until IS 'For a rotated key (<name>@rotated:<n>): what it signed is accepted until then, and recognised as old after. NULL for the current key and for keys canopy restore retired.';
