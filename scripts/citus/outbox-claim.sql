-- The push outbox claimed per node (issue 67; docs/CITUS.md): Citus refuses
-- FOR UPDATE across shards, so a deliverer claims on each node, over the
-- connection it keeps there for LISTEN (DECISIONS 150), from that node's own
-- shards of the outbox. The claim function is the same on every node; it
-- finds the node's shards in Citus's catalog and claims in each with
-- SKIP LOCKED. Load it on the coordinator as the superuser, then claim on
-- each node with outbox-claim.py:
--   psql -d DSN -f outbox-claim.sql && outbox-claim.py 9701 9702
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS o CASCADE;
CREATE SCHEMA o;
CREATE TABLE o.push_outbox(owner_id bigint NOT NULL, id bigint GENERATED ALWAYS AS IDENTITY, zone_id bigint NOT NULL,
                           claimed_until timestamptz, PRIMARY KEY (owner_id, id));
SET citus.shard_count = 4;
SELECT create_distributed_table('o.push_outbox', 'owner_id');
INSERT INTO o.push_outbox(owner_id, zone_id) SELECT g % 50 + 1, g FROM generate_series(1, 200) g;

-- Claims up to p_limit rows nobody holds, from the shards on this node, each
-- held for p_lease. (A single PostgreSQL keeps today's claim on the table.)
CREATE FUNCTION o.claim_push_outbox_here(p_limit integer, p_lease interval)
    RETURNS TABLE (owner_id bigint, id bigint, zone_id bigint)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    relation regclass;
    got integer := 0;
    more integer;
BEGIN
    FOR relation IN
        SELECT format('%s_%s', 'o.push_outbox', s.shardid)::regclass
          FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
         WHERE s.logicalrelid = 'o.push_outbox'::regclass
           AND p.groupid = (SELECT groupid FROM pg_dist_local_group)
    LOOP
        EXIT WHEN got >= p_limit;
        RETURN QUERY EXECUTE format(
            'UPDATE %s t SET claimed_until = now() + $2 WHERE (t.owner_id, t.id) IN (SELECT c.owner_id, c.id FROM %s c '
            'WHERE c.claimed_until IS NULL OR c.claimed_until < now() ORDER BY c.id LIMIT $1 FOR UPDATE SKIP LOCKED) '
            'RETURNING t.owner_id, t.id, t.zone_id', relation, relation) USING p_limit - got, p_lease;
        GET DIAGNOSTICS more = ROW_COUNT;
        got := got + more;
    END LOOP;
END $$;
