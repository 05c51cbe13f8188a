-- 0033: traces carried on to webhooks (issue 53, part 3; docs/TRACING.md).
-- A traced write names its trace (W3C `traceparent`) to the push outbox,
-- and the fan-out hands it to the deliveries it queues, so the webhook
-- call that tells of the write carries the trace on. NULL when the write
-- was not traced.
--
-- The functions that return these columns change their return type, so
-- they are dropped here and defined again, in their live version, in
-- sql/functions/push.sql (claim_push_outbox, claim_push_deliveries);
-- canopy.touch_zone, which writes the outbox, is in
-- sql/functions/change_feeds.sql. (IF EXISTS: a new database gets the
-- versioned migrations before any function.)
SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.push_outbox ADD COLUMN trace_parent text
    CHECK (trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');
COMMENT ON COLUMN canopy.push_outbox.trace_parent IS 'The W3C traceparent of the traced request that made the change (canopy.trace_parent, set by the gateway); NULL when it was not traced.';

ALTER TABLE canopy.push_deliveries ADD COLUMN trace_parent text
    CHECK (trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');
COMMENT ON COLUMN canopy.push_deliveries.trace_parent IS 'The traceparent of the latest traced change merged into this notification, sent on as the webhook''s traceparent.';

DROP FUNCTION IF EXISTS canopy.claim_push_outbox(integer, interval);
DROP FUNCTION IF EXISTS canopy.claim_push_deliveries(integer, interval, interval);
