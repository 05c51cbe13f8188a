-- Row-level security on the push tables (migrations/0020): their policies
-- and grants to canopy_gateway. canopy.push_outbox has no gateway policy at
-- all: only the functions of sql/functions/push.sql and canopy.touch_zone
-- touch it.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.push_subscriptions;
CREATE POLICY canopy_owner_all ON canopy.push_subscriptions TO canopy_owner USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS canopy_owner_all ON canopy.push_devices;
CREATE POLICY canopy_owner_all ON canopy.push_devices TO canopy_owner USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS canopy_owner_all ON canopy.push_outbox;
CREATE POLICY canopy_owner_all ON canopy.push_outbox TO canopy_owner USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS canopy_owner_all ON canopy.push_deliveries;
CREATE POLICY canopy_owner_all ON canopy.push_deliveries TO canopy_owner USING (true) WITH CHECK (true);

-- Subscriptions: your own, as yourself; a ZONE or QUERY subscription only
-- on a zone you reach.
DROP POLICY IF EXISTS push_subscriptions_own ON canopy.push_subscriptions;
CREATE POLICY push_subscriptions_own ON canopy.push_subscriptions TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()))
    WITH CHECK (user_id = (SELECT canopy.current_user_id())
                AND (zone_id IS NULL
                     -- The public zone (migrations/0025, 0026): anyone signed in may subscribe;
                     -- what fires is decided by the grants, as the subscriber.
                     OR (scope = 'PUBLIC' AND zone_id = (SELECT canopy.public_zone_id()))
                     OR /*@citus canopy.may_subscribe_to_zone(push_subscriptions.zone_id)*/
           EXISTS (SELECT 1 FROM canopy.memberships m
                                 WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = push_subscriptions.zone_id) /*@end*/));

-- Devices: your own to list and remove (registering is
-- canopy.register_push_device); a webhook's secret is never readable.
DROP POLICY IF EXISTS push_devices_select ON canopy.push_devices;
CREATE POLICY push_devices_select ON canopy.push_devices FOR SELECT TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));
DROP POLICY IF EXISTS push_devices_delete ON canopy.push_devices;
CREATE POLICY push_devices_delete ON canopy.push_devices FOR DELETE TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()));

-- Deliveries: the deliverer fans a change out as each subscriber, so a
-- subscriber's transaction queues notifications for their own devices only.
DROP POLICY IF EXISTS push_deliveries_own ON canopy.push_deliveries;
CREATE POLICY push_deliveries_own ON canopy.push_deliveries TO canopy_gateway
    USING (user_id = (SELECT canopy.current_user_id()))
    WITH CHECK (user_id = (SELECT canopy.current_user_id())
                AND /*@citus canopy.owns_push_device(push_deliveries.device_id)*/
           EXISTS (SELECT 1 FROM canopy.push_devices d
                             WHERE d.id = push_deliveries.device_id AND d.user_id = (SELECT canopy.current_user_id())) /*@end*/);

-- Grants: only what the gateway needs (REVOKE ALL also drops column grants).
REVOKE ALL ON TABLE canopy.push_subscriptions FROM canopy_gateway;
GRANT SELECT, INSERT, UPDATE, DELETE ON canopy.push_subscriptions TO canopy_gateway;
REVOKE ALL ON TABLE canopy.push_devices FROM canopy_gateway;
GRANT SELECT (id, user_id, kind, apns_token, apns_environment, apns_topic, endpoint, webhook_url, last_sent_at, failing_since, created_at),
      DELETE ON canopy.push_devices TO canopy_gateway;
REVOKE ALL ON TABLE canopy.push_outbox FROM canopy_gateway;
REVOKE ALL ON TABLE canopy.push_deliveries FROM canopy_gateway;
GRANT SELECT, UPDATE (subscription_ids, version, trace_parent) ON canopy.push_deliveries TO canopy_gateway;
-- The columns of a new row the gateway may choose (on Citus a table grant
-- and sql/triggers/gateway_columns.sql; DECISIONS 166).
SELECT canopy.grant_gateway_insert('canopy.push_deliveries', ARRAY['device_id', 'user_id', 'subscription_ids', 'trace_parent']);
