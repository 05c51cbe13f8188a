-- The database feed's per-owner commit clock (DECISIONS 148), as a model:
-- each owner's clock is bumped at commit by a deferred constraint trigger,
-- once per zone a transaction changed; the zone keeps the position. Run by
-- owner-clock-race.py on a single PostgreSQL or on Citus (:citus = on
-- distributes every table by the owner's id).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS c CASCADE;
\if :citus
SET citus.shard_count = 4;
SET citus.enable_unsafe_triggers = on;
\endif
CREATE SCHEMA c;
CREATE TABLE c.owner_clocks(owner_id bigint PRIMARY KEY, position bigint NOT NULL DEFAULT 0);
CREATE TABLE c.zones(owner_id bigint, id bigint, name text, changed_position bigint NOT NULL DEFAULT 0, last_change bigint NOT NULL DEFAULT 0, PRIMARY KEY(owner_id,id));
CREATE TABLE c.records(owner_id bigint, zone_id bigint, name text, v text, change_seq bigint, PRIMARY KEY(owner_id, zone_id, name));
CREATE TABLE c.log(owner_id bigint, position bigint, zone_id bigint, committed_by text, PRIMARY KEY(owner_id, position, zone_id));
\if :citus
SELECT create_distributed_table('c.owner_clocks','owner_id');
SELECT create_distributed_table('c.zones','owner_id', colocate_with=>'c.owner_clocks');
SELECT create_distributed_table('c.records','owner_id', colocate_with=>'c.owner_clocks');
SELECT create_distributed_table('c.log','owner_id', colocate_with=>'c.owner_clocks');
\endif

-- BEFORE: the zone's own position, under the zone's row lock (as touch_zone).
CREATE FUNCTION c.records_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE c.zones SET last_change = last_change + 1 WHERE owner_id = NEW.owner_id AND id = NEW.zone_id RETURNING last_change INTO NEW.change_seq;
  RETURN NEW;
END $$;
-- At commit (deferred): the owner's clock, once per zone per transaction.
CREATE FUNCTION c.records_commit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE p bigint; flag text := 'c.stamped_' || NEW.owner_id || '_' || NEW.zone_id;
BEGIN
  IF current_setting(flag, true) = 'y' THEN RETURN NULL; END IF;
  PERFORM set_config(flag, 'y', true);
  UPDATE c.owner_clocks SET position = position + 1 WHERE owner_id = NEW.owner_id RETURNING position INTO p;
  UPDATE c.zones SET changed_position = p WHERE owner_id = NEW.owner_id AND id = NEW.zone_id;
  INSERT INTO c.log VALUES (NEW.owner_id, p, NEW.zone_id, current_setting('application_name'));
  RETURN NULL;
END $$;
CREATE TRIGGER records_before BEFORE INSERT OR UPDATE ON c.records FOR EACH ROW EXECUTE FUNCTION c.records_before();
CREATE CONSTRAINT TRIGGER records_commit AFTER INSERT OR UPDATE ON c.records DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION c.records_commit();

INSERT INTO c.owner_clocks SELECT g FROM generate_series(1,8) g;
INSERT INTO c.zones(owner_id, id, name) SELECT o, o*10+z, 'z' FROM generate_series(1,8) o, generate_series(1,3) z;
