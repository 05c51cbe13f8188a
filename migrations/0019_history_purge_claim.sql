-- Many gateways, one database (issue 19): the change-history purge runs once
-- an interval, whichever gateway claims it first, not once per gateway.
-- Structure only; the claim is canopy.claim_history_purge in
-- sql/functions/change_feeds.sql.
SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.feed_state ADD COLUMN history_purge_claimed_at timestamptz;
COMMENT ON COLUMN canopy.feed_state.history_purge_claimed_at IS
    'When a gateway last claimed the change-history purge (canopy.claim_history_purge): the others skip theirs until most of an interval has passed. NULL: never.';
