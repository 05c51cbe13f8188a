-- canopy.use_daily_quota(): counts one use of a capped action by the
-- current user today (UTC) and refuses past the cap of canopy.daily_quotas
-- (tables in migrations/0023_daily_quotas.sql).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- SQLSTATE: CN003 LIMIT_EXCEEDED.

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.use_daily_quota(p_action text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_user bigint := canopy.current_user_id();
    v_cap integer;
    v_used integer;
BEGIN
    IF v_user IS NULL THEN
        RETURN;
    END IF;
    SELECT per_day INTO v_cap FROM canopy.daily_quotas WHERE action = p_action;
    IF v_cap IS NULL THEN
        RAISE EXCEPTION 'no daily quota named %', p_action USING ERRCODE = 'CN004';
    END IF;
    -- Earlier days' counts are no longer needed: the table stays a row a
    -- user and action.
    DELETE FROM canopy.daily_quota_use
     WHERE user_id = v_user AND action = p_action AND day < (now() AT TIME ZONE 'UTC')::date;
    INSERT INTO canopy.daily_quota_use AS q (user_id, action, day, used)
    VALUES (v_user, p_action, (now() AT TIME ZONE 'UTC')::date, 1)
    ON CONFLICT (user_id, action, day) DO UPDATE SET used = q.used + 1
    RETURNING used INTO v_used;
    IF v_used > v_cap THEN
        RAISE EXCEPTION 'you have reached today''s limit of % %s; try again tomorrow (UTC)', v_cap, replace(p_action, '_', ' ')
            USING ERRCODE = 'CN003';
    END IF;
END
$$;

REVOKE ALL ON FUNCTION canopy.use_daily_quota(text) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.use_daily_quota(text) TO canopy_gateway;
