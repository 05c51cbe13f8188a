-- 0035: a subscription keeps the notificationInfo it was saved with
-- (issue 66; Web Services' Notification Info Dictionary, CloudKit's
-- CKSubscription.NotificationInfo), so subscriptions/modify and
-- subscriptions/lookup|list answer it back. Canopy's pushes stay silent and
-- coalesced (docs/PUSH.md); what the dictionary asks of a visible alert is
-- kept for the client, not shown (docs/WEB_SERVICES.md, "Subscriptions").
-- The gateway checks its keys, their types and its size (4 KB of compact
-- JSON); the database its shape and a bound twice that, as jsonb's text
-- spaces every key and element out. Structure only: the table's grants and policies are unchanged
-- (sql/policies/push.sql).
SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.push_subscriptions ADD COLUMN notification_info jsonb
    CHECK (jsonb_typeof(notification_info) = 'object' AND octet_length(notification_info::text) <= 8192);
COMMENT ON COLUMN canopy.push_subscriptions.notification_info IS 'The Notification Info Dictionary the subscription was saved with (alertBody, soundName, shouldBadge, shouldSendContentAvailable, …), answered back as saved; NULL: none.';
