-- canopy.grant_gateway_insert: the columns of a new row the gateway may
-- choose (issue 67; DECISIONS 166).
--
-- On one PostgreSQL a column-level grant says it: `GRANT INSERT (a, b) ON
-- t`, and an INSERT naming any other column is refused. On Citus the
-- coordinator fills in every default and sends the whole row to the shard,
-- `INSERT INTO t_102013 (id, a, b, created_at, …)`, which that grant
-- refuses ("permission denied for table t_102013"). There the gateway is
-- granted INSERT on the table, and the table's BEFORE INSERT trigger
-- a_gateway_columns (sql/triggers/gateway_columns.sql) gives every other
-- column, on a row the gateway inserts, the value it would have had by
-- default. The policies' files call this with the same list on both
-- engines. GatewayGrantTests (one PostgreSQL) and
-- CitusGatewayColumnsTests (Citus) hold both halves to it.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.grant_gateway_insert(p_table regclass, p_columns text[]) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        EXECUTE format('GRANT INSERT ON %s TO canopy_gateway', p_table);
    ELSE
        EXECUTE format('GRANT INSERT (%s) ON %s TO canopy_gateway',
                       (SELECT string_agg(quote_ident(c), ', ' ORDER BY n) FROM unnest(p_columns) WITH ORDINALITY AS u(c, n)),
                       p_table);
    END IF;
END
$$;

COMMENT ON FUNCTION canopy.grant_gateway_insert(regclass, text[]) IS
    'Lets the gateway insert rows of p_table choosing only p_columns: a column-level grant on one PostgreSQL, a table grant kept by the a_gateway_columns trigger on Citus (DECISIONS 166).';
REVOKE ALL ON FUNCTION canopy.grant_gateway_insert(regclass, text[]) FROM PUBLIC, canopy_gateway;
