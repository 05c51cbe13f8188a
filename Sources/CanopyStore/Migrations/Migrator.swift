import Foundation
import Logging
import PostgresNIO

/// Applies `migrations/*.sql` in order, each in its own transaction, under a
/// transaction-scoped advisory lock, recording name and checksum in
/// `canopy.schema_migrations`. Many processes may run `up` at once: each
/// file is applied exactly once. An applied file that was edited stops
/// everything, naming the file.
public struct Migrator: Sendable {
    /// The advisory lock key every migrator takes (ASCII "canopymg").
    public static let lockKey: Int64 = 0x63616E6F70796D67

    /// What `status` reports for a file.
    public struct FileStatus: Sendable, Equatable {
        public enum State: String, Sendable {
            case applied, pending, edited
            /// Applied in the database, but the file is gone.
            case missing
        }
        public let name: String
        public let state: State
        public let appliedAt: Date?
    }

    public let directory: String
    public let logger: Logger

    public init(directory: String, logger: Logger) {
        self.directory = directory
        self.logger = logger
    }

    /// Applies every pending file; returns the names applied by this call.
    /// `progress` hears about each file as it goes.
    @discardableResult
    public func up(
        connection: PostgresConnection,
        progress: @Sendable (String) -> Void = { _ in }
    ) async throws -> [String] {
        let files = try MigrationFile.load(directory: directory)
        try await verify(connection: connection, files: files)
        var applied: [String] = []
        for file in files {
            let start = ContinuousClock.now
            let didApply = try await apply(file, connection: connection)
            if didApply {
                applied.append(file.name)
                progress("applied \(file.name) in \(Self.format(ContinuousClock.now - start))")
                logger.info("applied migration", metadata: ["canopy.migration": "\(file.name)"])
            }
        }
        return applied
    }

    /// Fails, naming the file, when an applied migration was edited.
    public func verify(connection: PostgresConnection) async throws {
        try await verify(connection: connection, files: try MigrationFile.load(directory: directory))
    }

    public func status(connection: PostgresConnection) async throws -> [FileStatus] {
        let files = try MigrationFile.load(directory: directory)
        let applied = try await appliedMigrations(connection: connection)
        var result: [FileStatus] = files.map { file in
            guard let row = applied[file.name] else { return FileStatus(name: file.name, state: .pending, appliedAt: nil) }
            return FileStatus(name: file.name, state: row.checksum == file.checksum ? .applied : .edited, appliedAt: row.appliedAt)
        }
        let known = Set(files.map(\.name))
        for (name, row) in applied where !known.contains(name) {
            result.append(FileStatus(name: name, state: .missing, appliedAt: row.appliedAt))
        }
        return result.sorted { $0.name < $1.name }
    }

    /// Creates `NNNN_name.sql` with the next number; returns its path.
    public func create(name: String) throws -> String {
        guard name.range(of: "^[a-z0-9][a-z0-9_]{0,60}$", options: .regularExpression) != nil else {
            throw StoreError(.invalidInput, "migration name '\(name)' must be lower-case letters, digits and _, e.g. add_contacts_index")
        }
        let files = (try? MigrationFile.load(directory: directory)) ?? []
        let next = (files.map(\.version).max() ?? 0) + 1
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/\(String(format: "%04d", next))_\(name).sql"
        let template = """
            -- \(name): applied by `canopy migrate up` in one transaction.
            -- Objects belong to canopy_owner; grant the gateway only what it needs,
            -- and ENABLE and FORCE row-level security on every new table.
            SET LOCAL ROLE canopy_owner;


            """
        guard FileManager.default.createFile(atPath: path, contents: Data(template.utf8)) else {
            throw StoreError(.invalidInput, "cannot write \(path)")
        }
        return path
    }

    // MARK: - Internals

    struct AppliedRow {
        var checksum: String
        var appliedAt: Date
    }

    private func verify(connection: PostgresConnection, files: [MigrationFile]) async throws {
        let applied = try await appliedMigrations(connection: connection)
        for file in files {
            if let row = applied[file.name], row.checksum != file.checksum {
                throw StoreError(
                    .migrationEdited,
                    "migration \(file.name) was edited after it was applied (checksum \(row.checksum.prefix(12))… in the database, \(file.checksum.prefix(12))… on disk). Restore the file and put the change in a new migration (canopy migrate new NAME)."
                )
            }
        }
    }

    private func appliedMigrations(connection: PostgresConnection) async throws -> [String: AppliedRow] {
        try await connection.inTransaction(logger: logger) { connection in
            try await lockAndBootstrap(connection)
            let rows = try await connection.query(
                "SELECT name, checksum, applied_at FROM canopy.schema_migrations", logger: logger
            )
            var applied: [String: AppliedRow] = [:]
            for try await (name, checksum, appliedAt) in rows.decode((String, String, Date).self) {
                applied[name] = AppliedRow(checksum: checksum, appliedAt: appliedAt)
            }
            return applied
        }
    }

    private func lockAndBootstrap(_ connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
        try await connection.query("CREATE SCHEMA IF NOT EXISTS canopy", logger: logger)
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS canopy.schema_migrations (
                name text PRIMARY KEY,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            logger: logger
        )
    }

    /// Applies one file unless it is already applied; true if it applied it.
    private func apply(_ file: MigrationFile, connection: PostgresConnection) async throws -> Bool {
        let script = SQLScript(file.text)
        do {
            return try await connection.inTransaction(logger: logger) { connection in
                try await lockAndBootstrap(connection)
                let rows = try await connection.query(
                    "SELECT checksum FROM canopy.schema_migrations WHERE name = \(file.name)", logger: logger
                )
                for try await checksum in rows.decode(String.self) {
                    guard checksum == file.checksum else {
                        throw StoreError(.migrationEdited, "migration \(file.name) was edited after it was applied")
                    }
                    return false
                }
                for statement in script.statements {
                    do {
                        try await connection.query(PostgresQuery(unsafeSQL: statement.text), logger: logger)
                    } catch let error as PSQLError {
                        throw Self.located(error, file: file, statement: statement)
                    }
                }
                // A file may SET LOCAL ROLE; the record is the migrator's own.
                try await connection.query("RESET ROLE", logger: logger)
                try await connection.query(
                    "INSERT INTO canopy.schema_migrations (name, checksum) VALUES (\(file.name), \(file.checksum))",
                    logger: logger
                )
                return true
            }
        } catch let error as StoreError {
            throw error
        } catch {
            // A deferred constraint fails at COMMIT, after the last statement.
            throw StoreError(
                .migrationFailed,
                "migration \(file.name) failed at commit: \(PostgresErrors.message(of: error))\nNothing of \(file.name) was applied.",
                sqlState: PostgresErrors.sqlState(of: error), underlying: error
            )
        }
    }

    static func located(_ error: PSQLError, file: MigrationFile, statement: SQLScript.Statement) -> StoreError {
        var line = statement.line
        if let position = error.serverInfo?[.position].flatMap(Int.init), position > 0 {
            let prefix = statement.text.prefix(position - 1)
            line += prefix.filter { $0 == "\n" }.count
        }
        var message = "migration \(file.name) failed at line \(line): \(error.serverInfo?[.message] ?? String(describing: error.code))"
        if let detail = error.serverInfo?[.detail] { message += "\n  detail: \(detail)" }
        if let hint = error.serverInfo?[.hint] { message += "\n  hint: \(hint)" }
        if let context = error.serverInfo?[.locationContext] { message += "\n  context: \(context)" }
        message += "\nNothing of \(file.name) was applied."
        return StoreError(.migrationFailed, message, sqlState: error.serverInfo?[.sqlState], underlying: error)
    }

    static func format(_ duration: Duration) -> String {
        let ms = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return String(format: "%.0f ms", ms)
    }
}
