-- Storage quotas (issue 53, part 2; tables in migrations/0032): what a
-- record costs, charging and refunding a user, the check against their
-- quota, and what a user may read of their own (canopy.my_storage).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- SQLSTATE: CN007 QUOTA_EXCEEDED.
--
-- Exactness: every change to a user's bytes updates their canopy.storage_usage
-- row in the writing transaction, and the check reads the row it has just
-- locked, so two writers of the same user take turns there: neither can
-- pass the quota by not seeing the other (docs/QUOTAS.md).

SET LOCAL ROLE canopy_owner;

-- The bytes of the assets a record's fields hold (the stored form
-- {"type":"ASSET","sha256","size","contentType"}, as attach_asset writes it).
-- Two functions so the common case costs little: record_asset_bytes is one
-- expression, which PostgreSQL inlines into the triggers' queries, and
-- reads the fields' assets (a set-returning subquery, called per row:
-- about 9 µs) only when the record has any.
CREATE OR REPLACE FUNCTION canopy.asset_sizes(p_fields jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(sum((a->>'size')::bigint), 0)::bigint
      FROM jsonb_path_query(p_fields, 'lax $.*.** ? (@.type == "ASSET")') a
$$;
COMMENT ON FUNCTION canopy.asset_sizes(jsonb) IS 'Sum of the sizes of the assets in a record''s fields (see record_asset_bytes).';

CREATE OR REPLACE FUNCTION canopy.record_asset_bytes(p_fields jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_fields @? 'lax $.*.** ? (@.type == "ASSET")' THEN canopy.asset_sizes(p_fields) ELSE 0::bigint END
$$;
COMMENT ON FUNCTION canopy.record_asset_bytes(jsonb) IS 'Sum of the sizes of the assets a record''s fields hold.';

-- What a record costs to keep, besides its assets (issue 64: names, types
-- and the row were free, about 630 times what the quota said for records of
-- empty fields): its fields' JSON text, its name twice (the row and the
-- unique index on zone and name), its type and parent's names, and 200
-- bytes for the row's header, its fixed columns and its index entries.
CREATE OR REPLACE FUNCTION canopy.record_bytes(p_fields jsonb, p_name text, p_type text, p_parent text) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT (octet_length(p_fields::text) + 2 * octet_length(p_name) + octet_length(p_type)
            + coalesce(octet_length(p_parent), 0) + 200)::bigint
$$;
COMMENT ON FUNCTION canopy.record_bytes(jsonb, text, text, text) IS 'What a record costs to keep, besides its assets: its fields'' JSON text, its names and 200 bytes of row and index (issue 64).';
REVOKE ALL ON FUNCTION canopy.record_bytes(jsonb, text, text, text) FROM PUBLIC, canopy_gateway;

-- The quota that applies to p_user: their own, else the default; NULL: none.
-- PL/pgSQL, one table's plain lookup at a time: on Citus the storage
-- charges call this in a record's shard's task, where a SQL function's
-- parameters in a join cannot be planned ("could not create distributed
-- plan").
CREATE OR REPLACE FUNCTION canopy.storage_quota_of(p_user bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    own boolean;
    quota bigint;
BEGIN
    SELECT u.has_quota, u.quota_bytes INTO own, quota FROM canopy.storage_usage u WHERE u.user_id = p_user;
    IF own THEN
        RETURN quota;
    END IF;
    SELECT d.quota_bytes INTO quota FROM canopy.storage_quota_default d;
    RETURN quota;
END
$$;
COMMENT ON FUNCTION canopy.storage_quota_of(bigint) IS 'The storage quota in bytes that applies to a user (their own or the default); NULL for no limit.';

-- Bytes of p_user's uploads not attached yet and not expired.
CREATE OR REPLACE FUNCTION canopy.pending_upload_bytes(p_user bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    pending bigint;
BEGIN
    SELECT coalesce(sum(size), 0)::bigint INTO pending FROM canopy.uploads
     WHERE user_id = p_user AND used_at IS NULL AND expires_at > now();
    RETURN pending;
END
$$;
COMMENT ON FUNCTION canopy.pending_upload_bytes(bigint) IS 'Bytes of a user''s uploads that no record holds yet and that have not expired: they count against the quota until then.';

-- Raises CN007 when p_user's stored bytes plus p_adding (and their pending
-- uploads) pass their quota. The caller holds p_user's usage row locked.
CREATE OR REPLACE FUNCTION canopy.check_storage_quota(p_user bigint, p_stored bigint, p_adding bigint) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_quota bigint := canopy.storage_quota_of(p_user);
    v_pending bigint;
BEGIN
    IF v_quota IS NULL OR p_adding <= 0 THEN
        RETURN;
    END IF;
    v_pending := canopy.pending_upload_bytes(p_user);
    IF p_stored + v_pending > v_quota THEN
        IF p_user IS NOT DISTINCT FROM canopy.current_user_id() THEN
            RAISE EXCEPTION 'your storage is full: this change needs % more bytes, and % of your quota of % bytes are free',
                p_adding, greatest(v_quota - (p_stored - p_adding) - v_pending, 0), v_quota
                USING ERRCODE = 'CN007';
        END IF;
        RAISE EXCEPTION 'the storage this change is charged to (the zone owner''s, or a public record''s creator''s) is full: the change needs more room than is left'
            USING ERRCODE = 'CN007';
    END IF;
END
$$;
COMMENT ON FUNCTION canopy.check_storage_quota(bigint, bigint, bigint) IS 'Refuses (CN007, QUOTA_EXCEEDED) a change adding p_adding bytes that leaves a user''s stored bytes and pending uploads over their quota.';

-- Charges (or, with negative amounts, refunds) p_user; refuses past their
-- quota when the change adds bytes. Takes the user's usage row lock.
CREATE OR REPLACE FUNCTION canopy.charge_storage(p_user bigint, p_records bigint, p_field_bytes bigint, p_asset_bytes bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_stored bigint;
BEGIN
    -- The row, made on a user's first charge; a refund to a user being
    -- deleted finds none (it went with them) and has nothing to do.
    LOOP
        UPDATE canopy.storage_usage
           SET record_count = record_count + p_records,
               field_bytes = field_bytes + p_field_bytes,
               asset_bytes = asset_bytes + p_asset_bytes
         WHERE user_id = p_user
        RETURNING field_bytes + asset_bytes INTO v_stored;
        EXIT WHEN FOUND;
        IF p_records < 0 OR p_field_bytes < 0 OR p_asset_bytes < 0 THEN
            RETURN;
        END IF;
        INSERT INTO canopy.storage_usage (user_id) VALUES (p_user) ON CONFLICT (user_id) DO NOTHING;
    END LOOP;
    PERFORM canopy.check_storage_quota(p_user, v_stored, p_field_bytes + p_asset_bytes);
END
$$;
COMMENT ON FUNCTION canopy.charge_storage(bigint, bigint, bigint, bigint) IS 'Adds records and bytes to a user''s usage (negative: frees them) and refuses a growth past their quota (CN007).';

-- What the current user stores, may store and has pending: `me { usage }`.
-- PL/pgSQL, reading the user's row by their id: as an inlined SQL function
-- (a LEFT JOIN of the usage under a test of the caller) Citus refused it
-- ("outer joins and pseudoconstant quals are not supported"), and uploads
-- on distributed tables failed (DECISIONS 176).
CREATE OR REPLACE FUNCTION canopy.my_storage()
    RETURNS TABLE (record_count bigint, field_bytes bigint, asset_bytes bigint, pending_upload_bytes bigint, quota_bytes bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    me bigint := canopy.current_user_id();
    usage canopy.storage_usage;
BEGIN
    IF me IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO usage FROM canopy.storage_usage u WHERE u.user_id = me;
    RETURN QUERY SELECT coalesce(usage.record_count, 0), coalesce(usage.field_bytes, 0), coalesce(usage.asset_bytes, 0),
                        canopy.pending_upload_bytes(me), canopy.storage_quota_of(me);
END
$$;
COMMENT ON FUNCTION canopy.my_storage() IS 'The current user''s storage: records and bytes charged to them, uploads pending, and their quota (NULL: none).';

REVOKE ALL ON FUNCTION canopy.asset_sizes(jsonb) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.record_asset_bytes(jsonb) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.storage_quota_of(bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.pending_upload_bytes(bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.check_storage_quota(bigint, bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.charge_storage(bigint, bigint, bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.my_storage() FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.my_storage() TO canopy_gateway;

-- For /metrics: totals over every user, no user named.
CREATE OR REPLACE FUNCTION canopy.storage_totals()
    RETURNS TABLE (users bigint, stored_bytes bigint, users_near_quota bigint, users_at_quota bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*), coalesce(sum(u.field_bytes + u.asset_bytes), 0)::bigint,
           count(*) FILTER (WHERE q.quota IS NOT NULL AND u.field_bytes + u.asset_bytes >= 0.9 * q.quota),
           count(*) FILTER (WHERE q.quota IS NOT NULL AND u.field_bytes + u.asset_bytes >= q.quota)
      FROM canopy.storage_usage u
      CROSS JOIN LATERAL (SELECT CASE WHEN u.has_quota THEN u.quota_bytes
                                      ELSE (SELECT d.quota_bytes FROM canopy.storage_quota_default d) END AS quota) q
$$;
COMMENT ON FUNCTION canopy.storage_totals() IS 'Users charged, bytes stored over all of them, and how many are at 90% and at 100% of their quota: numbers for /metrics, no user named.';

REVOKE ALL ON FUNCTION canopy.storage_totals() FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.storage_totals() TO canopy_gateway;
