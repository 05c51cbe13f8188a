import CanopyAdmin
import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// Real PostgreSQL for tests: the same embedded cluster `canopy serve` uses,
/// in `$CANOPY_TEST_DATA_DIR`, a folder `scripts/test-tier.sh` makes empty
/// for each tier and removes afterwards (docs/TESTING.md): no test process
/// meets another's databases, so none are dropped. A template database is
/// migrated once per test process, and a fresh copy of it is made for every
/// suite that asks, so suites run in parallel without sharing rows.
public actor TestDatabase {
    public static let shared = TestDatabase()

    public static let logger: Logger = {
        var logger = Logger(label: "canopy.tests", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        return logger
    }()

    public static var migrationsDirectory: String { "\(Repository.root)/migrations" }
    /// The repeatable SQL files (`sql/`), beside `migrations/`.
    public static var codeDirectory: String { "\(Repository.root)/sql" }

    // Tasks, not values: the actor is re-entered while they run, and
    // every caller must wait for the one start-up and the one template.
    private var cluster: Task<DatabaseEndpoint, any Error>?
    private var template: Task<String, any Error>?
    private var counter = 0

    /// The running test cluster's administrator endpoint (database `postgres`).
    public func server() async throws -> DatabaseEndpoint {
        if let cluster { return try await cluster.value }
        let task = Task {
            let running = try await Self.cluster().start(logger: Self.logger)
            return running.adminEndpoint.database("postgres")
        }
        cluster = task
        return try await task.value
    }

    /// An empty database (no migrations), for migration tests.
    public func emptyDatabase() async throws -> DatabaseEndpoint {
        let server = try await server()
        counter += 1
        let name = "canopy_t\(getpid())_\(counter)"
        try await Self.withConnection(server) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: Self.logger)
        }
        return server.database(name)
    }

    /// An empty database made a Citus database on every node of the tier's
    /// Citus cluster (`scripts/test-tier.sh citus`): the extension in it on
    /// each node, the coordinator and workers registered in it.
    public func citusDatabase() async throws -> DatabaseEndpoint {
        let cluster = try Self.cluster()
        guard try cluster.citusWorkerCount() != nil else { throw CitusClusterMissing() }
        // Finds it running; its answer carries the workers' ports.
        let running = try await cluster.start(logger: Self.logger)
        counter += 1
        let name = "canopy_c\(getpid())_\(counter)"
        try await cluster.prepareCitusDatabase(name, coordinator: running, logger: Self.logger)
        return running.adminEndpoint.database(name)
    }

    /// ``citusDatabase()`` with Canopy's migrations applied (every table
    /// on the coordinator until the schema is distributed, issue 67).
    public func migratedCitusDatabase() async throws -> DatabaseEndpoint {
        let endpoint = try await citusDatabase()
        try await Self.withConnection(endpoint) { connection in
            try await Migrator(directory: Self.migrationsDirectory, logger: Self.logger).up(connection: connection)
        }
        return endpoint
    }

    /// The tier's cluster, from `$CANOPY_TEST_DATA_DIR`.
    public static func cluster() throws -> EmbeddedCluster {
        guard let directory = ProcessInfo.processInfo.environment["CANOPY_TEST_DATA_DIR"], !directory.isEmpty else {
            throw TestClusterMissing()
        }
        return EmbeddedCluster(dataDirectory: directory)
    }

    /// A migrated database of its own; returns the administrator endpoint.
    public func migratedDatabase() async throws -> DatabaseEndpoint {
        let server = try await server()
        let template = try await migratedTemplate(server)
        counter += 1
        let name = "canopy_t\(getpid())_\(counter)"
        // One copy at a time: the server makes them one after another anyway,
        // and suites asking at once held a connection each while they queued
        // (84 at once, and 400 with the gateways' pools, in one CI run).
        await takeCopyTurn()
        defer { endCopyTurn() }
        // The template's last session (the migration's) may still be ending on
        // the server when the first copy is asked for: PostgreSQL then refuses
        // with 55006 ("being accessed by other users"), so wait and ask again.
        for attempt in 1... {
            do {
                try await Self.withConnection(server) { connection in
                    try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name) TEMPLATE \(template)"), logger: Self.logger)
                }
                break
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55006" && attempt < 50 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        return server.database(name)
    }

    private var copying = false
    private var waitingToCopy: [CheckedContinuation<Void, Never>] = []

    private func takeCopyTurn() async {
        guard copying else {
            copying = true
            return
        }
        await withCheckedContinuation { waitingToCopy.append($0) }
    }

    private func endCopyTurn() {
        if waitingToCopy.isEmpty {
            copying = false
        } else {
            waitingToCopy.removeFirst().resume()
        }
    }

    private func migratedTemplate(_ server: DatabaseEndpoint) async throws -> String {
        if let template { return try await template.value }
        let task = Task { try await Self.makeTemplate(server) }
        template = task
        return try await task.value
    }

    private static func makeTemplate(_ server: DatabaseEndpoint) async throws -> String {
        let name = "canopy_tpl\(getpid())"
        try await withConnection(server) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: Self.logger)
        }
        try await Self.withConnection(server.database(name)) { connection in
            try await Migrator(directory: Self.migrationsDirectory, logger: Self.logger).up(connection: connection)
        }
        return name
    }

    /// Runs `body` on a fresh connection, closing it afterwards.
    @discardableResult
    public static func withConnection<T: Sendable>(
        _ endpoint: DatabaseEndpoint,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await PostgresConnection.connect(
            configuration: endpoint.connectionConfiguration(), id: 1, logger: logger
        )
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// A database test run outside `scripts/test-tier.sh`, which gives each
/// tier a fresh cluster of its own.
public struct TestClusterMissing: Error, CustomStringConvertible {
    public var description: String {
        "CANOPY_TEST_DATA_DIR is not set: run tests with scripts/test-tier.sh TIER [FILTER] (docs/TESTING.md), which starts a fresh PostgreSQL cluster for the tier and removes it afterwards"
    }
}


/// A Citus test run on a cluster that is not one: the Citus tier starts its
/// own (`scripts/test-tier.sh citus`).
public struct CitusClusterMissing: Error, CustomStringConvertible {
    public var description: String {
        "the cluster in CANOPY_TEST_DATA_DIR is not a Citus cluster: run the Citus tests with scripts/test-tier.sh citus, which starts a coordinator and two workers"
    }
}
