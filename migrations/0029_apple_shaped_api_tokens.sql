-- 0029: API tokens in Apple's shape (issue 49). CloudKit clients check that
-- a ckAPIToken is 64 hexadecimal characters before they send it; tokens made
-- from now on are (the selector is their first 16 digits, the secret the
-- other 48). Tokens made before keep their `cka_<selector>_<secret>` form
-- and keep working; this column says which form a row's token was given
-- in, so `canopy tokens api list` names each by the prefix its holder sees.

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.container_tokens ADD COLUMN cka_form boolean NOT NULL DEFAULT true;
ALTER TABLE canopy.container_tokens ALTER COLUMN cka_form SET DEFAULT false;
COMMENT ON COLUMN canopy.container_tokens.cka_form IS 'true: the token was issued as cka_<selector>_<secret> (before 0029); false: as 64 hex digits, the selector first.';
