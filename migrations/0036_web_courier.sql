-- 0036: Web Services' web courier (issue 66; docs/WEB_SERVICES.md,
-- "Notifications"). tokens/create makes the caller a COURIER device, named
-- by the SHA-256 of a token only the page holds (its webcourierURL), and
-- the page long-polls that URL for what its subscriptions fired. Its
-- notifications wait in push_deliveries as every device's do; the
-- deliverer sends none of them (canopy.claim_push_deliveries skips the
-- kind), the page's poll takes them (canopy.courier_take). Structure only:
-- the functions are in sql/functions/push.sql; the gateway's column grants
-- on push_devices (sql/policies/push.sql) do not include the hash.
SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.push_devices DROP CONSTRAINT push_devices_kind_check;
ALTER TABLE canopy.push_devices ADD CONSTRAINT push_devices_kind_check
    CHECK (kind IN ('APNS', 'WEB_PUSH', 'WEBHOOK', 'COURIER'));
ALTER TABLE canopy.push_devices ADD COLUMN courier_token_hash bytea CHECK (octet_length(courier_token_hash) = 32);
ALTER TABLE canopy.push_devices ADD CONSTRAINT push_devices_courier
    CHECK (kind <> 'COURIER' OR courier_token_hash IS NOT NULL);
CREATE UNIQUE INDEX push_devices_courier_token ON canopy.push_devices (courier_token_hash) WHERE kind = 'COURIER';
COMMENT ON COLUMN canopy.push_devices.courier_token_hash IS 'COURIER: the SHA-256 of the token in its webcourierURL (tokens/create); the token itself is kept only by the page.';
COMMENT ON COLUMN canopy.push_devices.last_sent_at IS 'When a notification was last accepted for it: at most one a second (coalescing). COURIER: when the page last polled.';
