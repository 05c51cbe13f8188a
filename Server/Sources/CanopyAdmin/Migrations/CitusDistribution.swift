import CanopyRequestStore
import Logging
import PostgresNIO

/// Where each of Canopy's tables lives on a Citus cluster, and the one
/// command that puts them there (issue 67, DECISIONS 161, docs/CITUS.md).
/// A zone's rows go with its owner (`owner_id`), a user's own rows with the
/// user (`user_id`), in one co-location group, so an owner's zones, records,
/// shares and memberships, and a user's storage, are on one node; the small
/// tables every node reads are reference tables; the rest stay on the
/// coordinator. The migrator runs it (`canopy migrate up --distribute`),
/// after every file, in one transaction: a failure leaves every table where
/// it was.
public enum CitusDistribution {
    /// A table's place on the cluster.
    public enum Place: String, Sendable, Equatable {
        /// A copy on every node (`create_reference_table`).
        case reference
        /// Sharded by `owner_id`, co-located with `canopy.zones`.
        case byOwner
        /// Sharded by `user_id`, in the same co-location group.
        case byUser
        /// On the coordinator only: found by a selector, hash or key before
        /// the user is known, or the migrator's own; or (push devices,
        /// deliveries, subscriptions and uploads) waiting for keys that hold
        /// `user_id` (docs/plans/ISSUE_67_SCHEMA_MAP.md §7).
        case coordinator
    }

    /// Every table of the `canopy` schema and its place. A table missing
    /// here stops the distribution, naming it: each new table needs a
    /// decision (docs/CITUS.md).
    public static let places: [String: Place] = [
        "users": .reference, "field_types": .reference, "record_type_grants": .reference,
        "security_roles": .reference, "role_members": .reference, "daily_quotas": .reference,
        "storage_quota_default": .reference, "server_secrets": .reference, "feed_state": .reference,
        "share_tokens": .reference, "push_watchers": .reference,
        "zones": .byOwner, "records": .byOwner, "tombstones": .byOwner, "shares": .byOwner,
        "participants": .byOwner, "memberships": .byOwner, "zone_departures": .byOwner, "owner_clocks": .byOwner,
        "share_requests": .byOwner, "share_activity": .byOwner, "push_outbox": .byOwner,
        "storage_usage": .byUser,
        "push_subscriptions": .coordinator, "push_devices": .coordinator, "push_deliveries": .coordinator, "daily_quota_use": .coordinator,
        "uploads": .coordinator, "api_tokens": .coordinator, "identities": .coordinator,
        "container_tokens": .coordinator, "server_keys": .coordinator, "server_key_signatures": .coordinator,
        "schema_migrations": .coordinator, "schema_repeatables": .coordinator, "schema_indexes": .coordinator,
    ]

    /// The order tables are sharded in: the anchor of the co-location
    /// group first.
    static let shardedOrder: [String] = {
        let sharded = places.filter { $0.value == .byOwner || $0.value == .byUser }.map(\.key).filter { $0 != "zones" }
        return ["zones"] + sharded.sorted()
    }()

    /// True when `canopy.zones` is a distributed table: the database was
    /// distributed. False on one PostgreSQL.
    public static func isDistributed(_ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        guard try await DatabaseEngine.detect(on: connection, logger: logger) == .citus else { return false }
        return try await zonesAreDistributed(connection, logger: logger)
    }

    /// ``isDistributed(_:logger:)`` where the engine is known to be Citus
    /// (the migrator's transactions, `canopy serve`), without asking again.
    public static func zonesAreDistributed(_ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass('canopy.zones') AND partmethod = 'h')",
            logger: logger
        )
        for try await distributed in rows.decode(Bool.self) { return distributed }
        return false
    }

    /// Puts every table not yet in its place there, in one transaction
    /// under the migrators' lock; returns the tables it placed (none when
    /// the database was distributed already).
    ///
    /// Citus needs a reference's tables placed before the reference, and
    /// Canopy's references go both ways (records → shares → records), so the
    /// foreign keys are taken off first and put back, unchanged, at the end.
    /// The tables' triggers are off while Citus copies their rows to the
    /// shards (a trigger on a shard would reach tables not yet there), and
    /// on again after; their functions are then marked to run nested
    /// (``prepareFunctions(_:logger:asOwner:)``).
    @discardableResult
    public static func distribute(
        _ connection: PostgresConnection, logger: Logger, progress: @Sendable (String) -> Void = { _ in }
    ) async throws -> [String] {
        guard try await DatabaseEngine.detect(on: connection, logger: logger) == .citus else {
            throw StoreError(.invalidInput, "--distribute needs a Citus coordinator: this database has no citus extension (docs/CITUS.md: canopy cluster start --citus, or CREATE EXTENSION citus on a coordinator)")
        }
        do {
            return try await placeEveryTable(connection, logger: logger, progress: progress)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(
                .migrationFailed,
                "distributing Canopy's tables failed: \(PostgresErrors.message(of: error))\nNothing was distributed: every table is where it was.",
                sqlState: PostgresErrors.sqlState(of: error), underlying: error
            )
        }
    }

    private static func placeEveryTable(
        _ connection: PostgresConnection, logger: Logger, progress: @Sendable (String) -> Void
    ) async throws -> [String] {
        try await connection.inTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Migrator.lockKey))", logger: logger)
            try await checkEveryTableHasAPlace(connection, logger: logger)
            let placed = try await placedTables(connection, logger: logger)
            let reference = places.filter { $0.value == .reference && !placed.contains($0.key) }.map(\.key).sorted()
            let sharded = shardedOrder.filter { !placed.contains($0) }
            guard !reference.isEmpty || !sharded.isEmpty else { return [] }
            for setting in ["SET LOCAL citus.enable_unsafe_triggers = on", "SET LOCAL citus.multi_shard_modify_mode = 'sequential'"] {
                try await connection.query(PostgresQuery(unsafeSQL: setting), logger: logger)
            }
            let foreignKeys = try await takeOffForeignKeys(connection, logger: logger)
            let quiet = reference + sharded
            for table in quiet {
                try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE canopy.\(table) DISABLE TRIGGER USER"), logger: logger)
            }
            for table in reference {
                try await connection.query(PostgresQuery(unsafeSQL: "SELECT create_reference_table('canopy.\(table)')"), logger: logger)
                progress("canopy.\(table): a reference table, on every node")
            }
            for table in sharded {
                let column = places[table] == .byOwner ? "owner_id" : "user_id"
                let colocation = table == "zones" ? "" : ", colocate_with => 'canopy.zones'"
                try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT create_distributed_table('canopy.\(table)', '\(column)'\(colocation))"), logger: logger
                )
                progress("canopy.\(table): sharded by \(column)")
            }
            for (table, name, definition) in foreignKeys {
                try await connection.query(
                    PostgresQuery(unsafeSQL: "ALTER TABLE \(table) ADD CONSTRAINT \(quoted(name)) \(definition)"), logger: logger
                )
            }
            for table in quiet {
                try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE canopy.\(table) ENABLE TRIGGER USER"), logger: logger)
            }
            try await continueIdentities(connection, logger: logger)
            try await prepareFunctions(connection, logger: logger)
            return quiet
        }
    }

    /// Sets every identity column's sequence past the rows it already
    /// numbered. Citus starts the sequence of a table it takes into its
    /// metadata on the coordinator (the tables that stay there, joined to a
    /// reference table by a foreign key) afresh, and the next row took id
    /// 1 again: "duplicate key value violates unique constraint
    /// api_tokens_pkey_102115" (docs/plans/ISSUE_67_SCHEMA_MAP.md §8.12).
    /// The workers draw from ranges of their own (their node's group in the
    /// high bits), above every id given before.
    static func continueIdentities(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query("""
            SELECT c.relname, a.attname, pg_get_serial_sequence(format('canopy.%I', c.relname), a.attname)
              FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
             WHERE c.relnamespace = 'canopy'::regnamespace AND c.relkind IN ('r', 'p') AND a.attidentity <> ''
               AND NOT a.attisdropped AND c.relname !~ '_[0-9]+$'
             ORDER BY 1
            """, logger: logger)
        var identities: [(table: String, column: String, sequence: String)] = []
        for try await (table, column, sequence) in rows.decode((String, String, String?).self) {
            if let sequence { identities.append((table, column, sequence)) }
        }
        for (table, column, sequence) in identities {
            // The sequence bound; the table and column (from the catalog) quoted.
            var query = PostgresQuery(unsafeSQL: """
                SELECT setval($1::regclass, greatest((SELECT max(\(quoted(column))) FROM canopy.\(quoted(table))), \
                pg_sequence_last_value($1::regclass), 1))
                """)
            query.binds.append(sequence, context: .default)
            try await connection.query(query, logger: logger)
        }
    }

    /// On a Citus coordinator: puts every function of the schema on the
    /// workers, and marks each function behind a trigger of a distributed
    /// table, and each PL/pgSQL function a distributed table's policy
    /// calls that reads Canopy's tables (`public_zone_id`,
    /// `granted_record_types`, …), and each PL/pgSQL function the gateway
    /// may call that reads them (`zone_feed_position`: the gateway's
    /// statements run as one shard's task, DECISIONS 168), to run with
    /// `citus.allow_nested_distributed_execution`. Such a trigger or policy
    /// runs on its row's shard, and the statements in those functions (the
    /// zone's memberships when a zone is made, the public zone's id when a
    /// record is read) are Citus queries of their own, which Citus refuses
    /// inside a shard's task unless told. They name the row's owner, so
    /// they run on the same node's co-located shards, in the same
    /// transaction (docs/plans/ISSUE_67_SCHEMA_MAP.md §7 and §8 list the
    /// writes that must still move off the shards). `CREATE OR REPLACE
    /// FUNCTION` clears the mark, so the migrator marks again in every
    /// transaction it commits on a distributed database (`asOwner`: as the
    /// functions' owner, whose connections changed the shards in that
    /// transaction, since Citus reaches them over no other); a no-op
    /// before the distribution.
    public static func prepareFunctions(_ connection: PostgresConnection, logger: Logger, asOwner: Bool = false) async throws {
        guard try await zonesAreDistributed(connection, logger: logger) else { return }
        // Operators and their classes, which Citus never carries, as the
        // administrator: only a superuser makes an operator class, and
        // run_command_on_workers connects as the current role (DECISIONS 176).
        try await carryOperators(connection, logger: logger)
        if asOwner { try await connection.query("SET LOCAL ROLE canopy_owner", logger: logger) }
        // Citus creates a function on the workers when it is made, unless
        // it depends on a table not distributed then (a row type's
        // argument: participant_label, made before the distribution), and
        // never later by itself: a trigger on a shard then finds no such
        // function. Every function of the schema goes to the workers.
        let missing = try await connection.query("""
            SELECT p.oid::regprocedure::text FROM pg_proc p
             WHERE p.pronamespace = 'canopy'::regnamespace
               AND NOT EXISTS (SELECT 1 FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid)
            """, logger: logger)
        var functionsToCarry: [String] = []
        for try await function in missing.decode(String.self) { functionsToCarry.append(function) }
        for function in functionsToCarry.sorted() {
            try await connection.query("SELECT create_distributed_function(\(function)::text::regprocedure)", logger: logger)
        }
        let rows = try await connection.query("""
            SELECT p.oid::regprocedure::text FROM pg_proc p
             WHERE NOT coalesce('citus.allow_nested_distributed_execution=on' = ANY (p.proconfig), false)
               AND (p.oid IN (SELECT t.tgfoid FROM pg_trigger t JOIN pg_dist_partition d ON d.logicalrelid = t.tgrelid
                               WHERE NOT t.tgisinternal)
                    OR (p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')
                        AND p.prosrc ~ '(FROM|JOIN)\\s+canopy\\.'
                        AND p.oid IN (SELECT dep.refobjid FROM pg_depend dep JOIN pg_policy pol ON pol.oid = dep.objid
                                        JOIN pg_dist_partition d ON d.logicalrelid = pol.polrelid
                                       WHERE dep.classid = 'pg_policy'::regclass AND dep.refclassid = 'pg_proc'::regclass))
                    OR (p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')
                        AND p.pronamespace = 'canopy'::regnamespace
                        AND p.prosrc ~ '(FROM|JOIN)\\s+canopy\\.'
                        AND has_function_privilege('canopy_gateway', p.oid, 'EXECUTE')))
            """, logger: logger)
        var functions: [String] = []
        for try await function in rows.decode(String.self) { functions.append(function) }
        for function in functions.sorted() {
            try await connection.query(
                PostgresQuery(unsafeSQL: "ALTER FUNCTION \(function) SET citus.allow_nested_distributed_execution = on"), logger: logger
            )
        }
        if asOwner { try await connection.query("RESET ROLE", logger: logger) }
    }

    private static func checkEveryTableHasAPlace(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(
            "SELECT relname::text FROM pg_class WHERE relnamespace = 'canopy'::regnamespace AND relkind IN ('r', 'p') ORDER BY 1",
            logger: logger
        )
        var missing: [String] = []
        for try await table in rows.decode(String.self) where places[table] == nil { missing.append(table) }
        guard missing.isEmpty else {
            throw StoreError(.invalidInput, "no place on Citus for canopy.\(missing.joined(separator: ", canopy.")): each table needs one in CitusDistribution.places (docs/CITUS.md). Nothing was distributed.")
        }
    }

    /// The tables already sharded or made reference tables. (Citus also
    /// takes coordinator tables that reference a reference table into its
    /// metadata, as Citus local tables: `repmodel` 's', not placed.)
    private static func placedTables(_ connection: PostgresConnection, logger: Logger) async throws -> Set<String> {
        let rows = try await connection.query("""
            SELECT c.relname::text FROM pg_dist_partition d JOIN pg_class c ON c.oid = d.logicalrelid
             WHERE c.relnamespace = 'canopy'::regnamespace AND (d.partmethod = 'h' OR (d.partmethod = 'n' AND d.repmodel = 't'))
            """, logger: logger)
        var placed: Set<String> = []
        for try await table in rows.decode(String.self) { placed.insert(table) }
        return placed
    }

    /// Drops every foreign key of the `canopy` schema; returns them
    /// (table, name, definition) to be put back.
    private static func takeOffForeignKeys(_ connection: PostgresConnection, logger: Logger) async throws -> [(String, String, String)] {
        let rows = try await connection.query("""
            SELECT conrelid::regclass::text, conname::text, pg_get_constraintdef(oid)
              FROM pg_constraint WHERE contype = 'f' AND connamespace = 'canopy'::regnamespace
             ORDER BY conrelid::regclass::text, conname
            """, logger: logger)
        var keys: [(String, String, String)] = []
        for try await key in rows.decode((String, String, String).self) { keys.append(key) }
        for (table, name, _) in keys {
            try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE \(table) DROP CONSTRAINT \(quoted(name))"), logger: logger)
        }
        return keys
    }

    private static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
