-- Does a membership probe that caches its answer for the transaction stay
-- right when the transaction changes memberships and reads again? (issue 67;
-- docs/CITUS.md). A model: records and memberships distributed by the
-- owner's id (:citus = on) or plain (off); the read policy calls a PL/pgSQL
-- SECURITY DEFINER probe that remembers each (user, owner, zone) answer in a
-- transaction-local setting whose key holds a generation, which the
-- memberships trigger bumps. Run as the superuser on a fresh database:
--   psql -v citus=on -d DSN -f probe-cache.sql
-- It raises (and psql exits non-zero) at the first wrong answer; :broken = on
-- leaves the trigger out, and then it must raise.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\if :{?broken}
\else
\set broken off
\endif
DROP SCHEMA IF EXISTS p CASCADE;
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'probe_owner') THEN CREATE ROLE probe_owner LOGIN NOSUPERUSER NOBYPASSRLS; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'probe_gateway') THEN CREATE ROLE probe_gateway LOGIN NOSUPERUSER NOBYPASSRLS; END IF;
END $$;
\if :citus
SET citus.shard_count = 4;
SET citus.enable_unsafe_triggers = on;
ALTER ROLE probe_gateway SET citus.propagate_set_commands = 'local';
\endif
CREATE SCHEMA p AUTHORIZATION probe_owner;
GRANT USAGE ON SCHEMA p TO probe_gateway;
CREATE FUNCTION p.current_user_id() RETURNS bigint LANGUAGE sql STABLE
AS $$ SELECT nullif(current_setting('p.user_id', true), '')::bigint $$;
CREATE TABLE p.memberships(owner_id bigint NOT NULL, zone_id bigint NOT NULL, user_id bigint NOT NULL, PRIMARY KEY (owner_id, zone_id, user_id));
CREATE TABLE p.records(owner_id bigint NOT NULL, zone_id bigint NOT NULL, name text NOT NULL, PRIMARY KEY (owner_id, zone_id, name));
ALTER TABLE p.memberships OWNER TO probe_owner;
ALTER TABLE p.records OWNER TO probe_owner;
\if :citus
SELECT create_distributed_table('p.memberships', 'owner_id');
SELECT create_distributed_table('p.records', 'owner_id', colocate_with => 'p.memberships');
\endif

CREATE FUNCTION p.may_read(p_owner bigint, p_zone bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    me bigint := p.current_user_id();
    k text := 'p.may_read_' || coalesce(current_setting('p.membership_generation', true), '') || '_' || coalesce(me, 0) || '_' || p_owner || '_' || p_zone;
    v text := current_setting(k, true);
    r boolean;
BEGIN
    IF v IS NOT NULL AND v <> '' THEN RETURN v = 't'; END IF;
    r := me = p_owner OR EXISTS (SELECT 1 FROM p.memberships m WHERE m.owner_id = p_owner AND m.zone_id = p_zone AND m.user_id = me);
    PERFORM set_config(k, CASE WHEN r THEN 't' ELSE 'f' END, true);
    RETURN r;
END $$;
-- Citus runs the probe inside a shard's task: it must be let start one more.
\if :citus
ALTER FUNCTION p.may_read(bigint, bigint) SET citus.allow_nested_distributed_execution = on;
\endif
ALTER FUNCTION p.may_read(bigint, bigint) OWNER TO probe_owner;
GRANT EXECUTE ON FUNCTION p.may_read(bigint, bigint), p.current_user_id() TO probe_gateway;

-- Any change to memberships starts a new generation of cached answers.
CREATE FUNCTION p.memberships_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('p.membership_generation', (coalesce(nullif(current_setting('p.membership_generation', true), ''), '0')::int + 1)::text, true);
    RETURN NULL;
END $$;
ALTER FUNCTION p.memberships_changed() OWNER TO probe_owner;
\if :broken
\else
CREATE TRIGGER memberships_changed AFTER INSERT OR UPDATE OR DELETE ON p.memberships FOR EACH ROW EXECUTE FUNCTION p.memberships_changed();
\endif

ALTER TABLE p.records ENABLE ROW LEVEL SECURITY;
ALTER TABLE p.records FORCE ROW LEVEL SECURITY;
ALTER TABLE p.memberships ENABLE ROW LEVEL SECURITY;
ALTER TABLE p.memberships FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_all ON p.records TO probe_owner USING (true) WITH CHECK (true);
CREATE POLICY owner_all ON p.memberships TO probe_owner USING (true) WITH CHECK (true);
CREATE POLICY records_select ON p.records FOR SELECT TO probe_gateway USING (p.may_read(owner_id, zone_id));
CREATE POLICY memberships_owner ON p.memberships TO probe_gateway USING (owner_id = p.current_user_id()) WITH CHECK (owner_id = p.current_user_id());
GRANT SELECT ON p.records TO probe_gateway;
GRANT SELECT, INSERT, DELETE ON p.memberships TO probe_gateway;
-- alice (1) owns zones 10 and 11, bob (2) owns zone 20; 5 records in each.
INSERT INTO p.records SELECT o, z, 'r' || i FROM (VALUES (1, 10), (1, 11), (2, 20)) AS zones(o, z), generate_series(1, 5) i;

-- As the gateway, in one transaction: bob reads alice's zone 10 (none),
-- alice adds him, he reads it (all 5), a read across every shard between,
-- alice removes him, he reads it (none again).
CREATE FUNCTION p.expect(what text, got bigint, want bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF got IS DISTINCT FROM want THEN RAISE EXCEPTION 'probe-cache: % — % rows, expected %', what, got, want; END IF;
END $$;
GRANT EXECUTE ON FUNCTION p.expect(text, bigint, bigint) TO probe_gateway;
\c - probe_gateway
BEGIN;
SET LOCAL p.user_id = '2';
SELECT p.expect('bob before he is a member', (SELECT count(*) FROM p.records WHERE owner_id = 1 AND zone_id = 10), 0);
SELECT p.expect('bob across every shard, before', (SELECT count(*) FROM p.records), 5);
SET LOCAL p.user_id = '1';
INSERT INTO p.memberships VALUES (1, 10, 2);
SET LOCAL p.user_id = '2';
SELECT p.expect('bob once alice added him', (SELECT count(*) FROM p.records WHERE owner_id = 1 AND zone_id = 10), 5);
SELECT p.expect('bob across every shard, a member', (SELECT count(*) FROM p.records), 10);
SELECT p.expect('bob, zone 11 still not', (SELECT count(*) FROM p.records WHERE owner_id = 1 AND zone_id = 11), 0);
SET LOCAL p.user_id = '1';
DELETE FROM p.memberships WHERE owner_id = 1 AND zone_id = 10 AND user_id = 2;
SET LOCAL p.user_id = '2';
SELECT p.expect('bob once alice removed him', (SELECT count(*) FROM p.records WHERE owner_id = 1 AND zone_id = 10), 0);
SELECT p.expect('bob across every shard, removed', (SELECT count(*) FROM p.records), 5);
COMMIT;
\echo probe-cache: every answer right
