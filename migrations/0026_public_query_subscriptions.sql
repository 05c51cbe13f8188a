-- 0026: QUERY push subscriptions in the public database (issue 36, API.md
-- §15). A subscription's scope may be PUBLIC (then it is a QUERY
-- subscription on the public zone: DATABASE and ZONE subscriptions there
-- are refused by the gateway, as CloudKit refuses them). Who it reaches and
-- whether a change fires it are decided in sql/functions/push.sql
-- (push_covered, push_candidates) and, as the subscriber, by the records'
-- policies: a subscriber is told only of records the grants let them read.

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.push_subscriptions DROP CONSTRAINT push_subscriptions_scope_check;
ALTER TABLE canopy.push_subscriptions ADD CONSTRAINT push_subscriptions_scope_check
    CHECK (scope IN ('PRIVATE', 'SHARED', 'PUBLIC'));
ALTER TABLE canopy.push_subscriptions ADD CONSTRAINT push_subscriptions_public_query
    CHECK (scope <> 'PUBLIC' OR (kind = 'QUERY' AND zone_id IS NOT NULL));
CREATE INDEX push_subscriptions_public_idx ON canopy.push_subscriptions (user_id) WHERE scope = 'PUBLIC';
COMMENT ON COLUMN canopy.push_subscriptions.scope IS 'The database: PRIVATE (the user''s zones), SHARED (zones shared with them) or PUBLIC (the public zone; QUERY subscriptions only).';
