-- The membership probes of the policies, as functions: what Citus runs in
-- place of each policy's EXISTS on canopy.memberships (DECISIONS 151, 158;
-- the policies name them in their /*@citus …*/ markers, and
-- PolicyExpansion puts them there on Citus only). One PostgreSQL keeps the
-- inline EXISTS, which these must answer exactly as: the permission matrix
-- runs against both (PermissionMatrixTests, CitusPermissionMatrixTests).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- * Each probe names the zone's owner (`m.owner_id = p_owner_id`): on Citus
--   the memberships of one owner are on one shard, the row's own, so the
--   probe is one co-located lookup.
-- * Each remembers its answer for the transaction (a transaction-local
--   setting) under a key that holds the caller, its arguments and the
--   memberships generation. canopy.memberships_generation, a trigger on
--   memberships (sql/triggers/memberships.sql), starts a new generation on
--   every change, so an answer never outlives the memberships it read
--   (scripts/citus/probe-cache.sql checks the model on both engines). A
--   session connected as canopy_gateway could set such a key by hand, but
--   it can already act as any user (canopy.user_id): this trusts it no
--   further, as touch_zone's settings do (change_feeds.sql).
-- * Each probe's query runs by EXECUTE … USING, its arguments bound as
--   values: Citus cannot plan a PL/pgSQL query whose parameters are the
--   function's variables on a distributed table ("could not create
--   distributed plan", found against distributed tables, DECISIONS 161),
--   and with bound values it routes the query to the owner's shard.
-- * PL/pgSQL, STABLE, SECURITY DEFINER (the owner sees every membership),
--   with citus.allow_nested_distributed_execution on: Citus runs a policy
--   inside a shard's task, and the probe is a query of its own. On one
--   PostgreSQL the setting is an unused placeholder.

SET LOCAL ROLE canopy_owner;

-- The key a probe remembers its answer under (the generation, the caller,
-- the probe and its arguments); what is remembered there, NULL when
-- nothing is; and remembering an answer, which returns it.
CREATE OR REPLACE FUNCTION canopy.probe_key(p_probe text, p_arguments text) RETURNS text
    LANGUAGE sql STABLE
AS $$
    SELECT 'canopy.probe_' || coalesce(nullif(current_setting('canopy.memberships_generation', true), ''), '0')
           || '_' || coalesce(canopy.current_user_id()::text, 'none') || '_' || p_probe || '_' || p_arguments
$$;
CREATE OR REPLACE FUNCTION canopy.probe_remembered(p_key text) RETURNS boolean
    LANGUAGE sql STABLE
AS $$ SELECT nullif(current_setting(p_key, true), '')::boolean $$;
CREATE OR REPLACE FUNCTION canopy.probe_remember(p_key text, p_answer boolean) RETURNS boolean
    LANGUAGE sql VOLATILE
AS $$ SELECT set_config(p_key, p_answer::text, true)::boolean $$;

-- records_select, tombstones_select (p_write false), records_insert and
-- records_update (true): the caller is a member of the zone, by its
-- owner's row or a zone-wide share, or of the record's own share; with
-- write permission when writing.
CREATE OR REPLACE FUNCTION canopy.may_reach_record(p_owner_id bigint, p_zone_id bigint, p_share_id bigint, p_write boolean) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key text := canopy.probe_key(CASE WHEN p_write THEN 'w' ELSE 'r' END,
                                 p_owner_id || '_' || p_zone_id || '_' || coalesce(p_share_id::text, 'n'));
    answer boolean := canopy.probe_remembered(key);
BEGIN
    IF answer IS NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM canopy.memberships m
                  WHERE m.owner_id = $1 AND m.user_id = canopy.current_user_id() AND m.zone_id = $2
                    AND (m.can_write OR NOT $4) AND (m.root_record_id IS NULL OR m.share_id = $3))'
           INTO answer USING p_owner_id, p_zone_id, p_share_id, p_write;
        answer := canopy.probe_remember(key, answer);
    END IF;
    RETURN answer;
END
$$;

-- records_delete: write permission, and a share's root only by the zone's
-- owner (a participant's row of that share does not reach it). Per record
-- (its id decides), so not remembered.
CREATE OR REPLACE FUNCTION canopy.may_delete_record(p_owner_id bigint, p_zone_id bigint, p_share_id bigint, p_record_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    answer boolean;
BEGIN
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM canopy.memberships m
              WHERE m.owner_id = $1 AND m.user_id = canopy.current_user_id() AND m.zone_id = $2
                AND m.can_write
                AND (m.share_id IS NULL OR m.root_record_id IS NULL
                     OR (m.share_id = $3 AND $4 <> m.root_record_id)))'
       INTO answer USING p_owner_id, p_zone_id, p_share_id, p_record_id;
    RETURN answer;
END
$$;

-- zones_select: the caller is a member of the zone in any way; users_select
-- (p_zone_id NULL): of any zone of the owner's.
CREATE OR REPLACE FUNCTION canopy.may_see_zone(p_owner_id bigint, p_zone_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key text := canopy.probe_key('z', p_owner_id || '_' || coalesce(p_zone_id::text, 'any'));
    answer boolean := canopy.probe_remembered(key);
BEGIN
    IF answer IS NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM canopy.memberships m
                  WHERE m.owner_id = $1 AND m.user_id = canopy.current_user_id()
                    AND ($2::bigint IS NULL OR m.zone_id = $2))'
           INTO answer USING p_owner_id, p_zone_id;
        answer := canopy.probe_remember(key, answer);
    END IF;
    RETURN answer;
END
$$;

-- The policies of shares, participants, share requests and share activity:
-- the caller's part in the share, p_as 'member' (accepted, not as its
-- owner: member_share_ids(false)), 'admin' (an ADMINISTRATOR:
-- admin_share_ids()) or 'writing_admin' (one with READ_WRITE:
-- writing_admin_share_ids()); any other p_as is false. Those helpers
-- gather all of a caller's shares once per statement, which one
-- PostgreSQL keeps; on Citus they would read every shard, so this asks
-- about the row's share on the row's shard. (owned_share_ids() and
-- owned_zone_ids() need no probe there: the row's owner_id is its zone's
-- owner, so they become `owner_id = canopy.current_user_id()`.)
CREATE OR REPLACE FUNCTION canopy.caller_in_share(p_owner_id bigint, p_share_id bigint, p_as text) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key text := canopy.probe_key('s', p_owner_id || '_' || p_share_id || '_' || p_as);
    answer boolean := canopy.probe_remembered(key);
BEGIN
    IF answer IS NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM canopy.memberships m
                  WHERE m.owner_id = $1 AND m.share_id = $2 AND m.user_id = canopy.current_user_id()
                    AND CASE $3 WHEN ''member'' THEN m.role <> ''OWNER''
                                WHEN ''admin'' THEN m.role = ''ADMINISTRATOR''
                                WHEN ''writing_admin'' THEN m.role = ''ADMINISTRATOR'' AND m.can_write
                                ELSE false END)'
           INTO answer USING p_owner_id, p_share_id, p_as;
        answer := canopy.probe_remember(key, answer);
    END IF;
    RETURN answer;
END
$$;

-- users_select: whether p_user_id takes part, in any status, in a share the
-- caller owns or administers (canopy.shares_managed_with, policy_helpers.sql,
-- asks the same from the other user's participant rows, by user: on Citus
-- that reads every shard for each user row). Here from the caller's own
-- memberships as OWNER or ADMINISTRATOR, joined to the participants of the
-- same owner and share (a join Citus keeps on each shard), remembered per
-- user for the transaction.
CREATE OR REPLACE FUNCTION canopy.manages_share_with(p_user_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key text := canopy.probe_key('u', p_user_id::text);
    answer boolean := canopy.probe_remembered(key);
BEGIN
    IF answer IS NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM canopy.memberships mine
                  JOIN canopy.participants p ON p.owner_id = mine.owner_id AND p.share_id = mine.share_id
                 WHERE mine.user_id = canopy.current_user_id() AND mine.role IN (''OWNER'', ''ADMINISTRATOR'')
                   AND p.user_id = $1)'
           INTO answer USING p_user_id;
        answer := canopy.probe_remember(key, answer);
    END IF;
    RETURN answer;
END
$$;

-- push_subscriptions_own: may_see_zone, for a subscription, whose row
-- does not hold the zone's owner (a subscriber is not the owner): the
-- owner is read from the zone first.
CREATE OR REPLACE FUNCTION canopy.may_subscribe_to_zone(p_zone_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint;
BEGIN
    EXECUTE 'SELECT z.owner_id FROM canopy.zones z WHERE z.id = $1' INTO owner USING p_zone_id;
    RETURN owner IS NOT NULL AND canopy.may_see_zone(owner, p_zone_id);
END
$$;

-- push_deliveries_own: the device is the caller's (push devices are the
-- caller's own rows, DECISIONS 148's "dist(user)"). Not remembered: it is
-- read once per queued delivery.
CREATE OR REPLACE FUNCTION canopy.owns_push_device(p_device_id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM canopy.push_devices d
                    WHERE d.id = p_device_id AND d.user_id = canopy.current_user_id());
END
$$;

DO $$
BEGIN
    -- Citus runs a policy inside a shard's task; the probe's own query is
    -- a nested execution, which Citus must be told to allow. Set only where
    -- Citus is loaded (elsewhere the name would be an unknown setting).
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        ALTER FUNCTION canopy.may_reach_record(bigint, bigint, bigint, boolean) SET citus.allow_nested_distributed_execution = on;
        ALTER FUNCTION canopy.may_delete_record(bigint, bigint, bigint, bigint) SET citus.allow_nested_distributed_execution = on;
        ALTER FUNCTION canopy.may_see_zone(bigint, bigint) SET citus.allow_nested_distributed_execution = on;
        ALTER FUNCTION canopy.caller_in_share(bigint, bigint, text) SET citus.allow_nested_distributed_execution = on;
        ALTER FUNCTION canopy.manages_share_with(bigint) SET citus.allow_nested_distributed_execution = on;
        ALTER FUNCTION canopy.may_subscribe_to_zone(bigint) SET citus.allow_nested_distributed_execution = on;
        ALTER FUNCTION canopy.owns_push_device(uuid) SET citus.allow_nested_distributed_execution = on;
    END IF;
END
$$;

COMMENT ON FUNCTION canopy.may_reach_record(bigint, bigint, bigint, boolean) IS 'Citus''s probe for records_select, tombstones_select (p_write false), records_insert and records_update (true), DECISIONS 158: the caller is a member of the zone or of the record''s share, writing if asked; remembered for the transaction.';
COMMENT ON FUNCTION canopy.may_delete_record(bigint, bigint, bigint, bigint) IS 'Citus''s records_delete probe: write permission, a share''s root only by the zone''s owner.';
COMMENT ON FUNCTION canopy.may_see_zone(bigint, bigint) IS 'Citus''s zones_select and users_select (zone NULL: any of the owner''s) probe: the caller is a member of the zone.';
COMMENT ON FUNCTION canopy.caller_in_share(bigint, bigint, text) IS 'Citus''s probe for the policies of shares, participants, share requests and share activity: the caller is a member (p_as member), an administrator (admin) or a writing administrator (writing_admin) of the share; remembered for the transaction.';
COMMENT ON FUNCTION canopy.manages_share_with(bigint) IS 'Citus''s users_select probe: the user takes part in a share the caller owns or administers (shares_managed_with, from the caller''s side); remembered for the transaction.';
COMMENT ON FUNCTION canopy.may_subscribe_to_zone(bigint) IS 'Citus''s push_subscriptions_own probe: may_see_zone, the owner read from the zone.';
COMMENT ON FUNCTION canopy.owns_push_device(uuid) IS 'Citus''s push_deliveries_own probe: the device is the caller''s.';

REVOKE ALL ON FUNCTION canopy.probe_key(text, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.probe_remembered(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.probe_remember(text, boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.may_reach_record(bigint, bigint, bigint, boolean) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.may_delete_record(bigint, bigint, bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.may_see_zone(bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.caller_in_share(bigint, bigint, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.manages_share_with(bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.may_subscribe_to_zone(bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.owns_push_device(uuid) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.may_reach_record(bigint, bigint, bigint, boolean) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.may_delete_record(bigint, bigint, bigint, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.may_see_zone(bigint, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.caller_in_share(bigint, bigint, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.manages_share_with(bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.may_subscribe_to_zone(bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.owns_push_device(uuid) TO canopy_gateway;
