-- a_gateway_columns: on Citus, the columns of a new row the gateway may not
-- choose get their defaults (issue 67; DECISIONS 166).
--
-- On Citus the gateway is granted INSERT on the whole table (a
-- column-level grant refuses the rows the coordinator sends its shards:
-- sql/functions/gateway_grants.sql). These BEFORE INSERT triggers take the
-- column grant's place: on a row inserted by canopy_gateway itself (not by
-- Canopy's SECURITY DEFINER functions, which run as canopy_owner), every
-- column outside canopy.grant_gateway_insert's list holds what its default
-- gives. Where the default is one value on every node (a constant, the
-- caller), any other value is refused, as the column grant refuses it
-- (42501); where it differs between the coordinator, which filled it in,
-- and the shard (a time, a transaction id, a random token), the trigger
-- sets it again, whatever the statement said. Named to fire first (BEFORE
-- triggers fire in name order), so the tables' other triggers see those
-- values.
--
-- Left out, as the tables' own triggers set them on every insert:
-- records (records_before_write sets every column outside the grant);
-- `id` of every table (an identity GENERATED ALWAYS: a statement choosing
-- it must say OVERRIDING SYSTEM VALUE) and shares.kind (generated).
--
-- On one PostgreSQL the column-level grants refuse such a statement, so
-- the triggers are not created there.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.zones_gateway_columns() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.tombstones_purged_through <> 0 OR NEW.access_changed_seq <> 0 THEN
        RAISE EXCEPTION 'permission denied: the gateway may not choose tombstones_purged_through or access_changed_seq of a new row of canopy.zones' USING ERRCODE = '42501';
    END IF;
    NEW.created_at := now();
    NEW.changed_xid := pg_current_xact_id();
    NEW.feed_base := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    -- This transaction's stamp, so the coordinator's announcement tells the
    -- owner's databaseChanged of the new zone (DECISIONS 172, 182).
    NEW.announce_txn := canopy.announcement_stamp();
    NEW.changed_position := 0;  -- canopy.zones_clock's, at commit (DECISIONS 173)
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION canopy.shares_gateway_columns() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.participant_count <> 0 THEN
        RAISE EXCEPTION 'permission denied: the gateway may not choose participant_count of a new row of canopy.shares' USING ERRCODE = '42501';
    END IF;
    NEW.url_token := replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
    NEW.created_at := now();
    NEW.modified_at := now();
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION canopy.participants_gateway_columns() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.invited_at := now();
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION canopy.share_requests_gateway_columns() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.requested_at := now();
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION canopy.uploads_gateway_columns() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.user_id IS DISTINCT FROM canopy.current_user_id() OR NEW.used_at IS NOT NULL THEN
        RAISE EXCEPTION 'permission denied: the gateway may not choose user_id or used_at of a new row of canopy.uploads' USING ERRCODE = '42501';
    END IF;
    NEW.created_at := now();
    NEW.expires_at := now() + interval '24 hours';
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION canopy.push_deliveries_gateway_columns() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.version <> 1 OR NEW.attempts <> 0 OR NEW.claimed_until IS NOT NULL THEN
        RAISE EXCEPTION 'permission denied: the gateway may not choose version, attempts or claimed_until of a new row of canopy.push_deliveries' USING ERRCODE = '42501';
    END IF;
    NEW.next_attempt_at := now();
    NEW.first_queued_at := now();
    RETURN NEW;
END
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['zones', 'shares', 'participants', 'share_requests', 'uploads', 'push_deliveries'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS a_gateway_columns ON canopy.%I', t);
        IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
            EXECUTE format('CREATE TRIGGER a_gateway_columns BEFORE INSERT ON canopy.%I FOR EACH ROW '
                           'WHEN (current_user = ''canopy_gateway'') EXECUTE FUNCTION canopy.%I()', t, t || '_gateway_columns');
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION canopy.zones_gateway_columns() IS 'Citus: a zone the gateway inserts holds the defaults of every column but owner_id and name: purge marks refused, stamps and positions set (DECISIONS 166).';
COMMENT ON FUNCTION canopy.shares_gateway_columns() IS 'Citus: a share the gateway inserts gets a fresh url_token and its stamps; a participant count is refused (DECISIONS 166).';
COMMENT ON FUNCTION canopy.participants_gateway_columns() IS 'Citus: a participant the gateway inserts is invited now (DECISIONS 166).';
COMMENT ON FUNCTION canopy.share_requests_gateway_columns() IS 'Citus: an access request the gateway inserts is made now (DECISIONS 166).';
COMMENT ON FUNCTION canopy.push_deliveries_gateway_columns() IS 'Citus: a push delivery the gateway queues is new (version 1, no attempt, unclaimed), or refused; due now (DECISIONS 166).';
COMMENT ON FUNCTION canopy.uploads_gateway_columns() IS 'Citus: an upload the gateway inserts is the caller''s and unused, or refused; made now, for 24 hours (DECISIONS 166).';
REVOKE ALL ON FUNCTION canopy.zones_gateway_columns() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.shares_gateway_columns() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.participants_gateway_columns() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.share_requests_gateway_columns() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.uploads_gateway_columns() FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.push_deliveries_gateway_columns() FROM PUBLIC, canopy_gateway;
