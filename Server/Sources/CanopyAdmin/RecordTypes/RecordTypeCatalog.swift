import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// One GRANT privilege of a record type, as `canopy.record_type_grants` keeps it.
public struct StoredGrant: Sendable, Equatable {
    public var recordType: String
    public var privilege: String
    public var role: String
    /// The GRANT clause it came from, counted from 0 within the record type.
    public var position: Int

    public init(recordType: String, privilege: String, role: String, position: Int) {
        self.recordType = recordType
        self.privilege = privilege
        self.role = role
        self.position = position
    }
}

/// An index `canopy schema apply` keeps on `canopy.records`.
public struct StoredIndex: Sendable, Equatable {
    public var name: String
    public var recordType: String
    public var fieldName: String
    public var kind: String
    /// `CREATE INDEX name ON canopy.records ...`, without CONCURRENTLY.
    public var definition: String

    public init(name: String, recordType: String, fieldName: String, kind: String, definition: String) {
        self.name = name
        self.recordType = recordType
        self.fieldName = fieldName
        self.kind = kind
        self.definition = definition
    }
}

/// The declared schema in the database, read and written by `canopy
/// schema` over an administrator connection: field types and indexes
/// (`canopy.field_types`), grants, and the indexes built for them.
public enum RecordTypeCatalog {
    /// Key of the session advisory lock one `apply` holds from start to end.
    static let applyLock: Int64 = 0x6361_6E6F_7079_7363   // "canopysc"

    public static func fields(connection: PostgresConnection, logger: Logger) async throws -> [StoredField] {
        var fields: [StoredField] = []
        let rows = try await connection.query(
            "SELECT record_type, field_name, field_type, queryable, sortable, searchable FROM canopy.field_types ORDER BY record_type, field_name",
            logger: logger
        )
        for try await (type, name, fieldType, queryable, sortable, searchable) in rows.decode((String, String, String, Bool, Bool, Bool).self) {
            fields.append(StoredField(recordType: type, fieldName: name, fieldType: fieldType, queryable: queryable, sortable: sortable, searchable: searchable))
        }
        return fields
    }

    /// The custom security roles (`CREATE ROLE`), by name.
    public static func roles(connection: PostgresConnection, logger: Logger) async throws -> [String] {
        var roles: [String] = []
        let rows = try await connection.query("SELECT name FROM canopy.security_roles ORDER BY name", logger: logger)
        for try await name in rows.decode(String.self) { roles.append(name) }
        return roles
    }

    public static func grants(connection: PostgresConnection, logger: Logger) async throws -> [StoredGrant] {
        var grants: [StoredGrant] = []
        let rows = try await connection.query(
            "SELECT record_type, privilege, role_name, position FROM canopy.record_type_grants ORDER BY record_type, position, privilege",
            logger: logger
        )
        for try await (type, privilege, role, position) in rows.decode((String, String, String, Int).self) {
            grants.append(StoredGrant(recordType: type, privilege: privilege, role: role, position: position))
        }
        return grants
    }

    /// How many records of `recordType` hold `field` (any field when nil):
    /// what dropping or retyping it would strand.
    public static func holders(of recordType: String, field: String, connection: PostgresConnection, logger: Logger) async throws -> Int {
        let rows = try await connection.query(
            "SELECT count(*)::int8 FROM canopy.records WHERE record_type = \(recordType) AND fields ? \(field)", logger: logger
        )
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// Runs `body` holding the apply lock, so two applies never interleave.
    public static func withApplyLock<T: Sendable>(
        connection: PostgresConnection, logger: Logger, _ body: () async throws -> T
    ) async throws -> T {
        try await connection.query("SELECT pg_advisory_lock(\(applyLock))", logger: logger)
        do {
            let result = try await body()
            try await connection.query("SELECT pg_advisory_unlock(\(applyLock))", logger: logger)
            return result
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(applyLock))", logger: logger)
            throw error
        }
    }

    /// Writes the schema in one transaction: fields upserted and removed,
    /// each listed record type's grants replaced, and the wanted indexes
    /// registered (before they are built: see ``buildIndexes``).
    public static func write(
        upserting fields: [StoredField], removing removed: [(recordType: String, fieldName: String)],
        grants: [String: [StoredGrant]], roles: (added: [String], dropped: [String]) = ([], []),
        indexes: [StoredIndex], connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.inTransaction(logger: logger) { connection in
            for role in roles.added {
                try await connection.query("INSERT INTO canopy.security_roles (name) VALUES (\(role)) ON CONFLICT DO NOTHING", logger: logger)
            }
            for field in fields {
                try await connection.query("""
                    INSERT INTO canopy.field_types (record_type, field_name, field_type, queryable, sortable, searchable)
                    VALUES (\(field.recordType), \(field.fieldName), \(field.fieldType), \(field.queryable), \(field.sortable), \(field.searchable))
                    ON CONFLICT (record_type, field_name) DO UPDATE SET field_type = excluded.field_type,
                        queryable = excluded.queryable, sortable = excluded.sortable, searchable = excluded.searchable
                    """, logger: logger)
            }
            for (recordType, fieldName) in removed {
                try await connection.query(
                    "DELETE FROM canopy.field_types WHERE record_type = \(recordType) AND field_name = \(fieldName)", logger: logger
                )
            }
            for (recordType, list) in grants {
                try await connection.query("DELETE FROM canopy.record_type_grants WHERE record_type = \(recordType)", logger: logger)
                for grant in list {
                    try await connection.query("""
                        INSERT INTO canopy.record_type_grants (record_type, privilege, role_name, position)
                        VALUES (\(grant.recordType), \(grant.privilege), \(grant.role), \(grant.position))
                        """, logger: logger)
                }
            }
            // A dropped role's members go with it (ON DELETE CASCADE).
            for role in roles.dropped {
                try await connection.query("DELETE FROM canopy.security_roles WHERE name = \(role)", logger: logger)
            }
            for index in indexes {
                // A field retyped (development mode) wants a new index of
                // the same kind: the old one's registration goes now (its
                // index is dropped by buildIndexes, which finds it unwanted),
                // or the new one's breaks (record_type, field_name, kind).
                try await connection.query("""
                    DELETE FROM canopy.schema_indexes WHERE record_type = \(index.recordType) AND field_name = \(index.fieldName)
                       AND kind = \(index.kind) AND index_name <> \(index.name)
                    """, logger: logger)
                try await connection.query("""
                    INSERT INTO canopy.schema_indexes (index_name, record_type, field_name, kind, definition)
                    VALUES (\(index.name), \(index.recordType), \(index.fieldName), \(index.kind), \(index.definition))
                    ON CONFLICT (index_name) DO NOTHING
                    """, logger: logger)
            }
        }
    }

    /// The schema's indexes on `canopy.records` there are, by name: whether
    /// each is valid (false: a build was interrupted).
    static func schemaIndexes(connection: PostgresConnection, logger: Logger) async throws -> [String: Bool] {
        var existing: [String: Bool] = [:]
        let rows = try await connection.query("""
            SELECT c.relname::text, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'canopy' AND c.relname LIKE 'records\\_schema\\_%'
            """, logger: logger)
        for try await (name, valid) in rows.decode((String, Bool).self) { existing[name] = valid }
        return existing
    }

    /// The indexes of `wanted` that cannot be built on distributed Citus
    /// tables, one refusal each, naming its field (none on one PostgreSQL,
    /// and none for an index there already, built before the distribution).
    /// A queryable list's index and a searchable field's are GIN indexes
    /// with Canopy's operator classes (`canopy.text_list_ops`,
    /// `canopy.search_words_ops`), which Citus cannot carry to the shards of
    /// a new index: it refuses the index once built on the coordinator ("has
    /// dependency on unsupported object"), leaving it invalid (DECISIONS
    /// 187).
    public static func refusalsOnDistributedTables(
        _ wanted: [StoredIndex], connection: PostgresConnection, logger: Logger
    ) async throws -> [String] {
        guard try await CitusDistribution.isDistributed(connection, logger: logger) else { return [] }
        let existing = try await schemaIndexes(connection: connection, logger: logger)
        return wanted.filter { $0.kind != "btree" && existing[$0.name] != true }.map { index in
            let option = index.kind == "list" ? "QUERYABLE" : "SEARCHABLE"
            return "\(index.recordType).\(index.fieldName) is \(option): its \(index.kind) index needs Canopy's operator class, "
                + "which Citus cannot carry to a new index's shards on distributed tables; declare it without \(option) "
                + "(docs/CITUS.md, DECISIONS 187)"
        }
    }

    /// What ``buildIndexes`` did.
    public struct IndexReport: Sendable, Equatable {
        public var built: [String] = []
        public var rebuilt: [String] = []
        public var dropped: [String] = []
        public var kept: [String] = []
    }

    /// Makes the indexes on `canopy.records` be exactly `wanted` (plus the
    /// migrations' own): builds missing ones and rebuilds invalid ones (a
    /// build that was interrupted) with CREATE INDEX CONCURRENTLY, which
    /// lets writers go on, and drops those no longer wanted, concurrently
    /// too. Each step is reported through `progress` as it starts and ends.
    public static func buildIndexes(
        _ wanted: [StoredIndex], connection: PostgresConnection, logger: Logger, progress: (String) -> Void
    ) async throws -> IndexReport {
        var report = IndexReport()
        let existing = try await schemaIndexes(connection: connection, logger: logger)

        for index in wanted {
            precondition(index.name.hasPrefix("records_schema_") && index.definition.hasPrefix("CREATE INDEX \(index.name) "), "not a schema index")
            let label = "\(index.recordType).\(index.fieldName) (\(index.kind), \(index.name))"
            switch existing[index.name] {
            case true?:
                report.kept.append(index.name)
                continue
            case false?:
                progress("rebuilding invalid index \(label)...")
                try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS canopy.\(index.name)"), logger: logger)
                report.rebuilt.append(index.name)
            case nil:
                progress("building index \(label)...")
                report.built.append(index.name)
            }
            let started = ContinuousClock.now
            let concurrent = "CREATE INDEX CONCURRENTLY " + index.definition.dropFirst("CREATE INDEX ".count)
            try await connection.query(PostgresQuery(unsafeSQL: concurrent), logger: logger)
            progress("  done in \(started.duration(to: .now).formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))")
        }

        if !report.built.isEmpty || !report.rebuilt.isEmpty {
            // A new expression index has no statistics until ANALYZE, and
            // autovacuum only analyzes after enough writes: until then the
            // planner guesses one matching row, sorts the whole range and
            // misses LIMIT's early stop (a 1,000,000-record zone's first
            // page timed out at 10 s in make bench-full).
            progress("gathering statistics for the new indexes (ANALYZE canopy.records)...")
            let started = ContinuousClock.now
            try await connection.query("ANALYZE canopy.records", logger: logger)
            progress("  done in \(started.duration(to: .now).formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))")
        }

        let wantedNames = Set(wanted.map(\.name))
        for name in existing.keys.sorted() where !wantedNames.contains(name) {
            progress("dropping index \(name), no longer declared...")
            try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS canopy.\(name)"), logger: logger)
            report.dropped.append(name)
        }
        try await connection.query(
            "DELETE FROM canopy.schema_indexes WHERE NOT (index_name = ANY(\(Array(wantedNames))))", logger: logger
        )
        return report
    }
}
