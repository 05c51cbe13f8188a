-- 0024: a Web Push device remembers the VAPID public key it subscribed
-- with (issue 35: `canopy secrets rotate vapid`). A browser's subscription
-- is bound to that key; after a rotation the deliverer keeps signing a
-- device's pushes with its own key while that key is accepted, and drops
-- the device (its page must subscribe again) once the key is retired.
-- register_push_device (ten arguments) and push_device_vapid_key are in
-- sql/functions/push.sql.

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.push_devices ADD COLUMN vapid_public_key text;
COMMENT ON COLUMN canopy.push_devices.vapid_public_key IS 'WEB_PUSH: the VAPID public key (base64url) current when the device registered, which its subscription is bound to; NULL for devices registered before 0024 (the key current then, never rotated before).';
