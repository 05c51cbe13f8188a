import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// Brings a database up to date with `migrations/` and `sql/`, under a
/// transaction-scoped advisory lock, so that many processes may run `up` at
/// once and each file is applied exactly once.
///
/// Versioned files (``MigrationLayout``) are applied once each, in order,
/// each in its own transaction, and recorded by name and checksum in
/// `canopy.schema_migrations`; an applied file that was edited stops
/// everything, naming the file. A new database applies the baseline; one
/// that applied archived files applies the rest of the archive instead.
/// Then the repeatable files of `sql/` (``RepeatableFile``) whose checksum
/// differs from the one recorded in `canopy.schema_repeatables` are applied
/// again, in the manifest's order, all in one transaction. On a Citus
/// coordinator their policies are first expanded for Citus
/// (``PolicyExpansion``), and the checksum is the expanded text's.
public struct Migrator: Sendable {
    /// The advisory lock key every migrator takes (ASCII "canopymg").
    public static let lockKey: Int64 = 0x63616E6F70796D67

    /// What `status` reports for a file.
    public struct FileStatus: Sendable, Equatable {
        public enum State: String, Sendable {
            case applied, pending, edited
            /// Applied in the database, but the file is gone.
            case missing
            /// A repeatable file whose text differs from what the database
            /// runs: `up` applies it again.
            case changed
            /// The baseline, in a database the archived files built.
            case skipped
        }
        public let name: String
        public let state: State
        public let appliedAt: Date?
    }

    /// The versioned files' directory (`migrations`).
    public let directory: String
    /// The repeatable files' directory (`sql`).
    public let codeDirectory: String
    public let logger: Logger

    /// `codeDirectory` defaults to `sql` beside `directory`.
    public init(directory: String, codeDirectory: String? = nil, logger: Logger) {
        self.directory = directory
        self.codeDirectory = codeDirectory ?? Self.defaultCodeDirectory(besides: directory)
        self.logger = logger
    }

    /// `sql` in the directory that holds `migrations`.
    public static func defaultCodeDirectory(besides migrations: String) -> String {
        let parent = URL(fileURLWithPath: migrations).deletingLastPathComponent().path
        return "\(parent)/sql"
    }

    /// Applies every pending versioned file, then every changed repeatable
    /// file; returns the names applied by this call (repeatable files as
    /// `sql/PATH`). `progress` hears about each file as it goes.
    @discardableResult
    public func up(
        connection: PostgresConnection,
        progress: @Sendable (String) -> Void = { _ in }
    ) async throws -> [String] {
        let layout = try MigrationLayout(directory: directory)
        let engine = try await DatabaseEngine.detect(on: connection, logger: logger)
        let code = try RepeatableFile.load(directory: codeDirectory).map { try $0.expanded(for: engine) }
        try await verify(connection: connection, layout: layout)
        let citus = engine == .citus
        var applied: [String] = []
        let steps = layout.archive.map { ($0, Need.upgradingFromArchive(layout)) }
            + (layout.baseline.map { [($0, Need.newDatabase(layout))] } ?? [])
            + layout.versioned.map { ($0, Need.always) }
        for (file, need) in steps {
            let start = ContinuousClock.now
            if citus { try await CitusSwitch.letOwnerLogIn(connection, logger: logger) }
            if try await apply(file, need: need, connection: connection, citus: citus) {
                applied.append(file.name)
                progress("applied \(file.name) in \(Self.format(ContinuousClock.now - start))")
                logger.info("applied migration", metadata: ["canopy.migration": "\(file.name)"])
            }
        }
        if citus {
            try await CitusSwitch.letOwnerLogIn(connection, logger: logger)
            try await CitusSwitch.recordSetsOnWorkers(connection, logger: logger)
        }
        for (path, duration) in try await apply(code, connection: connection, citus: citus) {
            applied.append("sql/\(path)")
            progress("applied sql/\(path) in \(Self.format(duration))")
            logger.info("applied repeatable file", metadata: ["canopy.migration": "sql/\(path)"])
        }
        return applied
    }

    /// Fails, naming the file, when an applied versioned file was edited;
    /// returns the repeatable files that `up` would apply again.
    @discardableResult
    public func verify(connection: PostgresConnection) async throws -> [String] {
        try await verify(connection: connection, layout: try MigrationLayout(directory: directory))
        return try await status(connection: connection).filter { $0.name.hasPrefix("sql/") && $0.state != .applied }.map(\.name)
    }

    public func status(connection: PostgresConnection) async throws -> [FileStatus] {
        let layout = try MigrationLayout(directory: directory)
        let engine = try await DatabaseEngine.detect(on: connection, logger: logger)
        let code = try RepeatableFile.load(directory: codeDirectory).map { try $0.expanded(for: engine) }
        let (applied, repeatables) = try await recorded(connection: connection)
        func state(of file: MigrationFile) -> FileStatus {
            guard let row = applied[file.name] else { return FileStatus(name: file.name, state: .pending, appliedAt: nil) }
            return FileStatus(name: file.name, state: row.checksum == file.checksum ? .applied : .edited, appliedAt: row.appliedAt)
        }
        var result: [FileStatus] = []
        let archiveStarted = layout.archive.contains { applied[$0.name] != nil }
        for file in layout.archive where applied[file.name] != nil || (archiveStarted && layout.baseline.map { applied[$0.name] == nil } == true) {
            result.append(state(of: file))
        }
        if let baseline = layout.baseline {
            result.append(archiveStarted && applied[baseline.name] == nil
                ? FileStatus(name: baseline.name, state: .skipped, appliedAt: nil)
                : state(of: baseline))
        }
        result += layout.versioned.map(state(of:))
        let known = Set(layout.all.map(\.name))
        for (name, row) in applied.sorted(by: { $0.key < $1.key }) where !known.contains(name) {
            result.append(FileStatus(name: name, state: .missing, appliedAt: row.appliedAt))
        }
        for file in code {
            let row = repeatables[file.path]
            let state: FileStatus.State = row == nil ? .pending : row!.checksum == file.checksum ? .applied : .changed
            result.append(FileStatus(name: "sql/\(file.path)", state: state, appliedAt: row?.appliedAt))
        }
        return result
    }

    /// Creates `NNNN_name.sql` with the next number; returns its path.
    public func create(name: String) throws -> String {
        guard name.range(of: "^[a-z0-9][a-z0-9_]{0,60}$", options: .regularExpression) != nil else {
            throw StoreError(.invalidInput, "migration name '\(name)' must be lower-case letters, digits and _, e.g. add_contacts_index")
        }
        let next = (try? MigrationLayout(directory: directory).nextVersion) ?? 1
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/\(String(format: "%04d", next))_\(name).sql"
        let template = """
            -- \(name): applied once by `canopy migrate up`, in one transaction.
            -- Tables, columns, indexes and data moves only: functions, triggers
            -- and policies live in sql/ (edit them there; see sql/README.md).
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

    /// When a versioned file is applied, decided under the lock.
    enum Need {
        case always
        /// The baseline: only in a database no archived file touched.
        case newDatabase(MigrationLayout)
        /// An archived file: only in a database that applied earlier
        /// archived files and not the baseline.
        case upgradingFromArchive(MigrationLayout)

        func holds(recorded: Set<String>) -> Bool {
            switch self {
            case .always:
                return true
            case .newDatabase(let layout):
                return !layout.archive.contains { recorded.contains($0.name) }
            case .upgradingFromArchive(let layout):
                let baselined = layout.baseline.map { recorded.contains($0.name) } ?? false
                return !baselined && layout.archive.contains { recorded.contains($0.name) }
            }
        }
    }

    private func verify(connection: PostgresConnection, layout: MigrationLayout) async throws {
        let applied = try await recorded(connection: connection).versioned
        for file in layout.all {
            if let row = applied[file.name], row.checksum != file.checksum {
                throw StoreError(
                    .migrationEdited,
                    "migration \(file.name) was edited after it was applied (checksum \(row.checksum.prefix(12))… in the database, \(file.checksum.prefix(12))… on disk). Restore the file and put the change in a new migration (canopy migrate new NAME)."
                )
            }
        }
    }

    /// What the database records of versioned and repeatable files.
    private func recorded(connection: PostgresConnection) async throws -> (versioned: [String: AppliedRow], repeatable: [String: AppliedRow]) {
        try await connection.inTransaction(logger: logger) { connection in
            try await lockAndBootstrap(connection)
            return (
                try await rows("SELECT name, checksum, applied_at FROM canopy.schema_migrations", connection),
                try await repeatablesRecorded(connection)
            )
        }
    }

    private func rows(_ query: PostgresQuery, _ connection: PostgresConnection) async throws -> [String: AppliedRow] {
        var result: [String: AppliedRow] = [:]
        for try await (name, checksum, appliedAt) in try await connection.query(query, logger: logger).decode((String, String, Date).self) {
            result[name] = AppliedRow(checksum: checksum, appliedAt: appliedAt)
        }
        return result
    }

    /// Recorded repeatable files; none before the versioned file that
    /// creates `canopy.schema_repeatables` has run.
    private func repeatablesRecorded(_ connection: PostgresConnection) async throws -> [String: AppliedRow] {
        let exists = try await connection.query("SELECT to_regclass('canopy.schema_repeatables') IS NOT NULL", logger: logger)
        for try await present in exists.decode(Bool.self) where !present { return [:] }
        return try await rows("SELECT path, checksum, applied_at FROM canopy.schema_repeatables", connection)
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

    /// Applies one versioned file unless it is applied already or not
    /// needed; true if it applied it.
    private func apply(_ file: MigrationFile, need: Need, connection: PostgresConnection, citus: Bool) async throws -> Bool {
        let script = SQLScript(file.text)
        let whatStays = "Nothing of \(file.name) was applied."
        return try await lockedTransaction(connection, "migration \(file.name)", whatStays: whatStays, citus: citus) { connection in
            let applied = try await rows("SELECT name, checksum, applied_at FROM canopy.schema_migrations", connection)
            if let row = applied[file.name] {
                guard row.checksum == file.checksum else {
                    throw StoreError(.migrationEdited, "migration \(file.name) was edited after it was applied")
                }
                return false
            }
            guard need.holds(recorded: Set(applied.keys)) else { return false }
            try await run(script, connection) { error, statement in
                Self.located(error, name: file.name, statement: statement, whatStays: whatStays)
            }
            // A file may SET LOCAL ROLE; the record is the migrator's own.
            try await connection.query("RESET ROLE", logger: logger)
            try await connection.query(
                "INSERT INTO canopy.schema_migrations (name, checksum) VALUES (\(file.name), \(file.checksum))",
                logger: logger
            )
            return true
        }
    }

    /// Applies, in one transaction and in the manifest's order, every
    /// repeatable file whose checksum differs from the recorded one;
    /// returns each applied path and how long it took.
    private func apply(_ code: [RepeatableFile], connection: PostgresConnection, citus: Bool) async throws -> [(String, Duration)] {
        guard !code.isEmpty else { return [] }
        let whatStays = "Nothing of sql/ was applied: the database's code is as it was."
        return try await lockedTransaction(connection, "the files of sql/", whatStays: whatStays, citus: citus) { connection in
            let exists = try await connection.query("SELECT to_regclass('canopy.schema_repeatables') IS NOT NULL", logger: logger)
            for try await present in exists.decode(Bool.self) where !present {
                throw StoreError(.migrationMissing, "canopy.schema_repeatables does not exist: no versioned migration created it, so the files of sql/ cannot be recorded")
            }
            let recorded = try await repeatablesRecorded(connection)
            var applied: [(String, Duration)] = []
            for file in code where recorded[file.path]?.checksum != file.checksum {
                let start = ContinuousClock.now
                try await run(SQLScript(file.text), connection) { error, statement in
                    Self.located(error, name: "sql/\(file.path)", statement: statement, whatStays: whatStays)
                }
                try await connection.query("RESET ROLE", logger: logger)
                try await connection.query(
                    """
                    INSERT INTO canopy.schema_repeatables (path, checksum) VALUES (\(file.path), \(file.checksum))
                    ON CONFLICT (path) DO UPDATE SET checksum = excluded.checksum, applied_at = now()
                    """,
                    logger: logger
                )
                applied.append((file.path, ContinuousClock.now - start))
            }
            return applied
        }
    }

    /// Runs `body` in a transaction that holds the migrators' lock. A
    /// failure at COMMIT (a deferred constraint, after the last statement)
    /// names `what` and says what stays. On Citus, a file may create
    /// triggers on distributed tables (Citus refuses them unless told), and
    /// a function it replaces loses its mark, so the transaction marks the
    /// trigger functions again before it commits (``CitusDistribution``).
    private func lockedTransaction<T: Sendable>(
        _ connection: PostgresConnection, _ what: String, whatStays: String, citus: Bool = false,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await connection.inTransaction(logger: logger) { connection in
                try await lockAndBootstrap(connection)
                if citus {
                    // One connection per node for the whole transaction:
                    // with Citus's parallel connections, a file's DDL on a
                    // shard and a later LOCK or write of it deadlock.
                    try await connection.query("SET LOCAL citus.enable_unsafe_triggers = on", logger: logger)
                    try await connection.query("SET LOCAL citus.multi_shard_modify_mode = 'sequential'", logger: logger)
                }
                let result = try await body(connection)
                if citus {
                    // As the functions' owner, who made them in this
                    // transaction: Citus reaches a shard changed here only
                    // over the connection of the role that changed it.
                    try await CitusDistribution.prepareFunctions(connection, logger: logger, asOwner: true)
                }
                return result
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(
                .migrationFailed,
                "\(what) failed at commit: \(PostgresErrors.message(of: error))\n\(whatStays)",
                sqlState: PostgresErrors.sqlState(of: error), underlying: error
            )
        }
    }

    /// Runs a script's statements in order, turning a failure into the
    /// error `locate` makes of it.
    private func run(
        _ script: SQLScript, _ connection: PostgresConnection,
        locate: (PSQLError, SQLScript.Statement) -> StoreError
    ) async throws {
        for statement in script.statements {
            do {
                try await connection.query(PostgresQuery(unsafeSQL: statement.text), logger: logger)
            } catch let error as PSQLError {
                throw locate(error, statement)
            }
        }
    }

    static func located(_ error: PSQLError, name: String, statement: SQLScript.Statement, whatStays: String) -> StoreError {
        var line = statement.line
        if let position = error.serverInfo?[.position].flatMap(Int.init), position > 0 {
            let prefix = statement.text.prefix(position - 1)
            line += prefix.filter { $0 == "\n" }.count
        }
        var message = "migration \(name) failed at line \(line): \(error.serverInfo?[.message] ?? String(describing: error.code))"
        if let detail = error.serverInfo?[.detail] { message += "\n  detail: \(detail)" }
        if let hint = error.serverInfo?[.hint] { message += "\n  hint: \(hint)" }
        if let context = error.serverInfo?[.locationContext] { message += "\n  context: \(context)" }
        message += "\n\(whatStays)"
        return StoreError(.migrationFailed, message, sqlState: error.serverInfo?[.sqlState], underlying: error)
    }

    static func format(_ duration: Duration) -> String {
        let ms = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return String(format: "%.0f ms", ms)
    }
}
