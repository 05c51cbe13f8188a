-- Push (issue 23, API.md §14, docs/PUSH.md): subscriptions kept on the
-- server, the devices they wake, and the two queues between a commit and a
-- push. Structure only; the functions are in sql/functions/push.sql (and the
-- outbox's writer in canopy.touch_zone, sql/functions/change_feeds.sql), the
-- policies in sql/policies/push.sql. Every table is under FORCE ROW LEVEL
-- SECURITY like the rest.
SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.push_subscriptions (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id          bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    subscription_id  text NOT NULL CHECK (char_length(subscription_id) BETWEEN 1 AND 255),
    kind             text NOT NULL CHECK (kind IN ('DATABASE', 'ZONE', 'QUERY')),
    scope            text NOT NULL CHECK (scope IN ('PRIVATE', 'SHARED')),
    zone_id          bigint REFERENCES canopy.zones (id) ON DELETE CASCADE,
    record_type      text CHECK (record_type ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$'),
    filter           text CHECK (octet_length(filter) <= 4096),
    args             jsonb CHECK (octet_length(args::text) <= 16384),
    fires_on         text[] NOT NULL DEFAULT '{CREATE,UPDATE,DELETE}'
                     CHECK (fires_on <@ '{CREATE,UPDATE,DELETE}' AND cardinality(fires_on) > 0),
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, subscription_id),
    CONSTRAINT push_subscriptions_zone CHECK (kind <> 'ZONE' OR zone_id IS NOT NULL),
    CONSTRAINT push_subscriptions_query CHECK ((kind = 'QUERY') = (record_type IS NOT NULL))
);
CREATE INDEX push_subscriptions_zone_idx ON canopy.push_subscriptions (zone_id) WHERE zone_id IS NOT NULL;
COMMENT ON TABLE canopy.push_subscriptions IS 'Subscriptions that outlive a connection (CKDatabaseSubscription, CKRecordZoneSubscription, CKQuerySubscription): a user''s own, woken by push on the devices they registered.';
COMMENT ON COLUMN canopy.push_subscriptions.subscription_id IS 'The client''s name for it (CKSubscription.ID), unique per user; what a notification carries.';
COMMENT ON COLUMN canopy.push_subscriptions.kind IS 'DATABASE: any zone of the scope; ZONE: one zone; QUERY: records of one type matching filter.';
COMMENT ON COLUMN canopy.push_subscriptions.scope IS 'The database: PRIVATE (the user''s zones) or SHARED (zones shared with them).';
COMMENT ON COLUMN canopy.push_subscriptions.zone_id IS 'ZONE: the zone; QUERY: the zone, or NULL for every zone of the scope.';
COMMENT ON COLUMN canopy.push_subscriptions.filter IS 'QUERY: the predicate (API.md §5), checked when saved and compiled again at each delivery; NULL matches every record of the type.';
COMMENT ON COLUMN canopy.push_subscriptions.fires_on IS 'QUERY: which of CREATE, UPDATE, DELETE fire it.';

CREATE TABLE canopy.push_devices (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id           bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    kind              text NOT NULL CHECK (kind IN ('APNS', 'WEB_PUSH', 'WEBHOOK')),
    apns_token        text CHECK (apns_token ~ '^[0-9a-f]{64,200}$'),
    apns_environment  text CHECK (apns_environment IN ('SANDBOX', 'PRODUCTION')),
    apns_topic        text CHECK (char_length(apns_topic) BETWEEN 1 AND 255),
    endpoint          text CHECK (char_length(endpoint) BETWEEN 1 AND 2048),
    p256dh            bytea CHECK (octet_length(p256dh) = 65),
    auth              bytea CHECK (octet_length(auth) = 16),
    webhook_url       text CHECK (char_length(webhook_url) BETWEEN 1 AND 2048),
    webhook_secret    bytea CHECK (octet_length(webhook_secret) = 32),
    last_sent_at      timestamptz,
    failing_since     timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT push_devices_apns CHECK (kind <> 'APNS' OR (apns_token IS NOT NULL AND apns_environment IS NOT NULL AND apns_topic IS NOT NULL)),
    CONSTRAINT push_devices_web_push CHECK (kind <> 'WEB_PUSH' OR (endpoint IS NOT NULL AND p256dh IS NOT NULL AND auth IS NOT NULL)),
    CONSTRAINT push_devices_webhook CHECK (kind <> 'WEBHOOK' OR (webhook_url IS NOT NULL AND webhook_secret IS NOT NULL))
);
CREATE INDEX push_devices_user_idx ON canopy.push_devices (user_id);
CREATE UNIQUE INDEX push_devices_apns_token ON canopy.push_devices (apns_token, apns_topic) WHERE kind = 'APNS';
CREATE UNIQUE INDEX push_devices_endpoint ON canopy.push_devices (endpoint) WHERE kind = 'WEB_PUSH';
CREATE UNIQUE INDEX push_devices_webhook ON canopy.push_devices (user_id, webhook_url) WHERE kind = 'WEBHOOK';
COMMENT ON TABLE canopy.push_devices IS 'Where a user''s notifications go: an APNs token, a Web Push subscription (RFC 8030/8291) or a webhook URL. A token or endpoint belongs to one user at a time (the last to register it).';
COMMENT ON COLUMN canopy.push_devices.webhook_secret IS 'The HMAC-SHA256 key of Canopy-Signature, shown to the owner once when registered; read only by canopy.claim_push_deliveries.';
COMMENT ON COLUMN canopy.push_devices.last_sent_at IS 'When a notification was last accepted for it: at most one a second (coalescing).';
COMMENT ON COLUMN canopy.push_devices.failing_since IS 'Set when a notification was given up after retrying for a day; cleared by the next success.';

CREATE TABLE canopy.push_outbox (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    zone_id        bigint NOT NULL,
    after_seq      bigint NOT NULL,
    origin_user    bigint,
    origin_device  uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    claimed_until  timestamptz
);
COMMENT ON TABLE canopy.push_outbox IS 'A committed change to a zone that a push subscription may cover: written by canopy.touch_zone in the changing transaction (so a rollback takes it back and a commit keeps it), fanned out to push_deliveries by a deliverer.';
COMMENT ON COLUMN canopy.push_outbox.zone_id IS 'The zone changed (no foreign key: a deleted zone''s departures are still told).';
COMMENT ON COLUMN canopy.push_outbox.after_seq IS 'canopy.change_seq''s last value when the transaction took the zone''s lock: its changes are at positions above it.';
COMMENT ON COLUMN canopy.push_outbox.origin_user IS 'Who made the change.';
COMMENT ON COLUMN canopy.push_outbox.origin_device IS 'The device that made it (Canopy-Device), not told of its own change.';
COMMENT ON COLUMN canopy.push_outbox.created_at IS 'The transaction''s start: records created at or after it are CREATE, older ones UPDATE.';
COMMENT ON COLUMN canopy.push_outbox.claimed_until IS 'A deliverer is fanning it out until then; after, another may.';

CREATE TABLE canopy.push_deliveries (
    device_id         uuid PRIMARY KEY REFERENCES canopy.push_devices (id) ON DELETE CASCADE,
    user_id           bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    subscription_ids  text[] NOT NULL,
    version           bigint NOT NULL DEFAULT 1,
    attempts          integer NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz NOT NULL DEFAULT now(),
    first_queued_at   timestamptz NOT NULL DEFAULT now(),
    claimed_until     timestamptz
);
CREATE INDEX push_deliveries_due_idx ON canopy.push_deliveries (next_attempt_at);
COMMENT ON TABLE canopy.push_deliveries IS 'A notification owed to a device: one row a device, so a burst of changes merges into one push (coalescing is the primary key). Deleted only once the push service accepted it.';
COMMENT ON COLUMN canopy.push_deliveries.subscription_ids IS 'Every subscription that fired since the last push.';
COMMENT ON COLUMN canopy.push_deliveries.version IS 'Raised by every merge: a sender deletes the row only if nothing merged while it was sending.';
COMMENT ON COLUMN canopy.push_deliveries.attempts IS 'Failed attempts so far (back-off 1 s doubling to 10 min).';

-- Who may reach a zone, by zone: the outbox's writer asks whether any of a
-- zone's members has a push subscription.
CREATE INDEX memberships_zone_user ON canopy.memberships (zone_id, user_id);

ALTER TABLE canopy.push_subscriptions ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.push_subscriptions FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.push_devices ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.push_devices FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.push_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.push_outbox FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.push_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.push_deliveries FORCE ROW LEVEL SECURITY;

COMMENT ON COLUMN canopy.push_subscriptions.user_id IS 'Whose it is: subscriptions are per user, as CloudKit''s.';
COMMENT ON COLUMN canopy.push_subscriptions.record_type IS 'QUERY: the record type it watches; NULL otherwise.';
COMMENT ON COLUMN canopy.push_subscriptions.args IS 'QUERY: the values of the filter''s $name placeholders.';
COMMENT ON COLUMN canopy.push_subscriptions.created_at IS 'When it was first saved.';
COMMENT ON COLUMN canopy.push_devices.user_id IS 'Whose device it is.';
COMMENT ON COLUMN canopy.push_devices.kind IS 'APNS, WEB_PUSH or WEBHOOK: which columns below are set.';
COMMENT ON COLUMN canopy.push_devices.apns_token IS 'APNS: the device token, lowercase hex.';
COMMENT ON COLUMN canopy.push_devices.apns_environment IS 'APNS: SANDBOX (development builds) or PRODUCTION.';
COMMENT ON COLUMN canopy.push_devices.apns_topic IS 'APNS: the app''s bundle ID (apns-topic).';
COMMENT ON COLUMN canopy.push_devices.endpoint IS 'WEB_PUSH: the push service URL of the browser''s PushSubscription.';
COMMENT ON COLUMN canopy.push_devices.p256dh IS 'WEB_PUSH: the browser''s P-256 public key (65 bytes, uncompressed), for RFC 8291 encryption.';
COMMENT ON COLUMN canopy.push_devices.auth IS 'WEB_PUSH: the browser''s 16-byte authentication secret.';
COMMENT ON COLUMN canopy.push_devices.webhook_url IS 'WEBHOOK: where notifications are POSTed.';
COMMENT ON COLUMN canopy.push_devices.created_at IS 'When it was first registered.';
COMMENT ON COLUMN canopy.push_deliveries.device_id IS 'The device owed a notification.';
COMMENT ON COLUMN canopy.push_deliveries.user_id IS 'The device''s user (row-level security).';
COMMENT ON COLUMN canopy.push_deliveries.next_attempt_at IS 'When it is next due (now, or after a back-off or the one-a-second gap).';
COMMENT ON COLUMN canopy.push_deliveries.first_queued_at IS 'When the oldest change it carries was queued: given up after a day.';
COMMENT ON COLUMN canopy.push_deliveries.claimed_until IS 'A deliverer is sending it until then; after, another may.';
