import CanopyRequestStore
import Logging
import PostgresNIO

extension CitusDistribution {
    /// Makes Canopy's operators and operator classes (`canopy.@>` and
    /// `canopy.@@`, `canopy.text_list_ops` and `canopy.search_words_ops`:
    /// sql/functions/typed_fields.sql) on every worker where they are
    /// missing. Citus carries functions to the workers but neither operators
    /// nor operator classes (citusdata/citus#4812), so a shard's task that
    /// tests a LIST field's value (`LIST_CONTAINS`) failed on the worker
    /// ("operator does not exist: text[] canopy.@> text[]"), and an index of
    /// a declared list or searchable field could not be made on a shard
    /// (DECISIONS 176). Each definition is written by the coordinator from
    /// its own catalog, run on each worker by `run_command_on_workers` in a
    /// block that creates it only when missing, and handed to canopy_owner
    /// as typed_fields.sql does. Their functions are on the workers already
    /// (``prepareFunctions(_:logger:asOwner:)`` carries them first).
    static func carryOperators(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query("""
            WITH operators AS (
                SELECT format(
                    'IF NOT EXISTS (SELECT 1 FROM pg_operator WHERE oprname = %L AND oprnamespace = %L::regnamespace '
                    'AND oprleft = %L::regtype AND oprright = %L::regtype) THEN '
                    'CREATE OPERATOR %I.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %I.%I%s%s); '
                    'ALTER OPERATOR %I.%s (%s, %s) OWNER TO %I; END IF;',
                    o.oprname, n.nspname, o.oprleft::regtype, o.oprright::regtype,
                    n.nspname, o.oprname, o.oprleft::regtype, o.oprright::regtype, pn.nspname, p.proname,
                    CASE WHEN o.oprrest <> 0 THEN format(', RESTRICT = %s', o.oprrest::regproc) ELSE '' END,
                    CASE WHEN o.oprjoin <> 0 THEN format(', JOIN = %s', o.oprjoin::regproc) ELSE '' END,
                    n.nspname, o.oprname, o.oprleft::regtype, o.oprright::regtype, r.rolname) AS block
                  FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace JOIN pg_roles r ON r.oid = o.oprowner
                  JOIN pg_proc p ON p.oid = o.oprcode JOIN pg_namespace pn ON pn.oid = p.pronamespace
                 WHERE n.nspname = 'canopy'
            ), classes AS (
                SELECT format(
                    'IF NOT EXISTS (SELECT 1 FROM pg_opclass WHERE opcname = %L AND opcnamespace = %L::regnamespace '
                    'AND opcmethod = (SELECT oid FROM pg_am WHERE amname = %L)) THEN '
                    'CREATE OPERATOR CLASS %I.%I FOR TYPE %s USING %I AS %s%s; '
                    'ALTER OPERATOR CLASS %I.%I USING %I OWNER TO %I; ALTER OPERATOR FAMILY %I.%I USING %I OWNER TO %I; END IF;',
                    c.opcname, n.nspname, am.amname,
                    n.nspname, c.opcname, c.opcintype::regtype, am.amname,
                    (SELECT string_agg(format('OPERATOR %s %I.%s (%s, %s)', ao.amopstrategy, onn.nspname, op.oprname,
                                              op.oprleft::regtype, op.oprright::regtype), ', ' ORDER BY ao.amopstrategy)
                       FROM pg_amop ao JOIN pg_operator op ON op.oid = ao.amopopr JOIN pg_namespace onn ON onn.oid = op.oprnamespace
                      WHERE ao.amopfamily = c.opcfamily)
                    || (SELECT string_agg(format(', FUNCTION %s %I.%I(%s)', ap.amprocnum, fn.nspname, f.proname,
                                                 pg_get_function_identity_arguments(f.oid)), '' ORDER BY ap.amprocnum)
                          FROM pg_amproc ap JOIN pg_proc f ON f.oid = ap.amproc JOIN pg_namespace fn ON fn.oid = f.pronamespace
                         WHERE ap.amprocfamily = c.opcfamily),
                    CASE WHEN c.opckeytype <> 0 THEN format(', STORAGE %s', c.opckeytype::regtype) ELSE '' END,
                    n.nspname, c.opcname, am.amname, r.rolname, n.nspname, c.opcname, am.amname, r.rolname) AS block
                  FROM pg_opclass c JOIN pg_namespace n ON n.oid = c.opcnamespace JOIN pg_am am ON am.oid = c.opcmethod
                  JOIN pg_roles r ON r.oid = c.opcowner
                 WHERE n.nspname = 'canopy'
            ), blocks AS (
                SELECT 'DO $carry$ BEGIN ' || string_agg(block, ' ') || ' END $carry$' AS command
                  FROM (SELECT block FROM operators UNION ALL SELECT block FROM classes) b
            )
            SELECT w.nodename, w.nodeport, w.success, w.result
              FROM blocks, LATERAL run_command_on_workers(blocks.command) w
             WHERE blocks.command IS NOT NULL
            """, logger: logger)
        var failures: [String] = []
        for try await (node, port, success, result) in rows.decode((String, Int32, Bool, String).self) where !success {
            failures.append("\(node):\(port): \(result)")
        }
        guard failures.isEmpty else {
            throw StoreError(
                .migrationFailed,
                "Canopy's operators could not be made on the Citus workers: \(failures.joined(separator: "; "))"
            )
        }
    }
}
