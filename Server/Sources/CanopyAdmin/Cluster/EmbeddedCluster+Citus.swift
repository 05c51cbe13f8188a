import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// A Citus cluster on one machine (issue 67, docs/CITUS.md): the embedded
/// cluster as the coordinator and N embedded clusters under `workers/<n>/`
/// as its workers, for development and the tests. Every node listens on its
/// own Unix socket and the workers on nothing else; Citus reaches a node by
/// its socket directory as the host, so the nodes need no passwords between
/// them (docs/CITUS.md, "A development cluster over Unix sockets").
///
/// Whether a data directory holds one is decided once, when it is first
/// initialised (`canopy cluster start --citus`), and remembered in the file
/// `citus-workers` (the number of workers); every later start, by any
/// command, starts the workers too and makes sure each node is registered
/// at its current port.
extension EmbeddedCluster {
    /// What a node of a Citus cluster is; nil for a single PostgreSQL.
    enum CitusRole: Sendable {
        case coordinator
        case worker
    }

    /// A worker of a running Citus cluster: how the coordinator (and a
    /// gateway listening on every node) reaches it.
    public struct CitusWorker: Sendable {
        /// 1-based, its folder under `workers/`.
        public let number: Int
        /// The host Citus knows it by: its socket directory.
        public let socketDirectory: String
        public let port: Int
        public let adminEndpoint: DatabaseEndpoint
    }

    var citusWorkersFile: String { "\(dataDirectory)/citus-workers" }
    var citusWorkerMarker: String { "\(dataDirectory)/citus-worker" }
    public var workersDirectory: String { "\(dataDirectory)/workers" }

    var citusRole: CitusRole? {
        if FileManager.default.fileExists(atPath: citusWorkersFile) { return .coordinator }
        if FileManager.default.fileExists(atPath: citusWorkerMarker) { return .worker }
        return nil
    }

    /// The number of workers this data directory's Citus cluster has, or
    /// nil for a single PostgreSQL.
    public func citusWorkerCount() throws -> Int? {
        guard FileManager.default.fileExists(atPath: citusWorkersFile) else { return nil }
        let text = try String(contentsOfFile: citusWorkersFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let count = Int(text), (1...16).contains(count) else {
            throw StoreError(.clusterFailed, "\(citusWorkersFile) should hold the number of Citus workers (1-16), not '\(text)'")
        }
        return count
    }

    /// Makes this data directory a Citus cluster of `workers` workers, before
    /// its first start. A directory that already holds a single PostgreSQL
    /// stays one (its tables would have to be distributed: start a fresh
    /// one); a Citus cluster may grow (the new workers join at the next
    /// start) but not shrink here (a worker's shards must be moved off it
    /// first: docs/DEPLOYMENT.md).
    public func makeCitus(workers: Int) throws {
        guard (1...16).contains(workers) else {
            throw StoreError(.invalidConfiguration, "--workers must be 1-16, not \(workers)")
        }
        if let current = try citusWorkerCount() {
            if workers < current {
                throw StoreError(
                    .invalidConfiguration,
                    "the Citus cluster in \(dataDirectory) has \(current) workers; removing workers means moving their shards off first (docs/DEPLOYMENT.md), so it is not done by --workers \(workers)"
                )
            }
            if workers == current { return }
        } else if FileManager.default.fileExists(atPath: "\(pgData)/PG_VERSION") {
            throw StoreError(
                .invalidConfiguration,
                "\(dataDirectory) already holds a single-node PostgreSQL cluster; a Citus cluster starts in a fresh --data-dir (docs/CITUS.md)"
            )
        }
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        try Data("\(workers)\n".utf8).write(to: URL(fileURLWithPath: citusWorkersFile))
    }

    /// The worker numbered `number` (it may not exist yet).
    func citusWorkerCluster(_ number: Int) -> EmbeddedCluster {
        EmbeddedCluster(dataDirectory: "\(workersDirectory)/\(number)")
    }

    /// The workers that were ever made here, in order.
    func citusWorkerClusters() -> [EmbeddedCluster] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: workersDirectory)) ?? []
        return names.compactMap(Int.init).sorted().map(citusWorkerCluster)
    }

    /// The settings a Citus node adds to its postgresql.conf.
    static func citusSettings(_ role: CitusRole, socketDirectory: String) -> String {
        """

        # Added by canopy: a Citus \(role == .coordinator ? "coordinator" : "worker") (docs/CITUS.md).
        # The nodes reach each other by their socket directories; a node
        # reaching itself (a shard move) does so by citus.local_hostname.
        shared_preload_libraries = 'citus'
        citus.local_hostname = '\(socketDirectory)'
        # Online shard moves replicate logically; writes across workers
        # commit in two phases.
        wal_level = logical
        max_prepared_transactions = 100
        # Citus runs a maintenance worker for every database that has the
        # extension (it recovers two-phase commits and drops the shards a
        # move left behind); PostgreSQL's 8 background workers run out with
        # a handful of databases ("could not start maintenance background
        # worker"). 128 covers a test tier's databases and a move's
        # logical replication workers.
        max_worker_processes = 128
        # Fewer shards than Citus's 32: every test database holds them all.
        citus.shard_count = 8

        """
    }

    /// Starts workers 1...count (making any that do not exist yet).
    func startCitusWorkers(_ count: Int, logger: Logger) async throws -> [CitusWorker] {
        var workers: [CitusWorker] = []
        for number in 1...count {
            let worker = citusWorkerCluster(number)
            try FileManager.default.createDirectory(atPath: worker.dataDirectory, withIntermediateDirectories: true)
            if !FileManager.default.fileExists(atPath: worker.citusWorkerMarker) {
                _ = FileManager.default.createFile(atPath: worker.citusWorkerMarker, contents: Data())
            }
            let running = try await worker.start(logger: logger)
            workers.append(CitusWorker(
                number: number, socketDirectory: worker.socketDirectory, port: running.port, adminEndpoint: running.adminEndpoint
            ))
        }
        return workers
    }

    /// Makes `database` a Citus database on every node of the running
    /// cluster: created on each (if missing), the extension in each, the
    /// coordinator and every worker registered at their current socket and
    /// port (a node that came back on another port is updated, not added
    /// twice). Citus's node list is kept per database, so a test database
    /// made after the cluster started needs this too.
    public func prepareCitusDatabase(_ database: String, coordinator: Running, logger: Logger) async throws {
        for worker in coordinator.citusWorkers {
            try await Self.createCitusDatabase(database, on: worker.adminEndpoint, logger: logger)
        }
        try await Self.createCitusDatabase(database, on: coordinator.adminEndpoint, logger: logger)
        try await Self.withAdminConnection(coordinator.adminEndpoint.database(database), logger: logger) { connection in
            try await connection.query(
                "SELECT citus_set_coordinator_host(\(socketDirectory), \(Int32(coordinator.port)))", logger: logger
            )
            var moved = false
            for worker in coordinator.citusWorkers {
                var registered: (id: Int32, port: Int32)?
                let rows = try await connection.query(
                    "SELECT nodeid, nodeport FROM pg_dist_node WHERE nodename = \(worker.socketDirectory)", logger: logger
                )
                for try await (id, port) in rows.decode((Int32, Int32).self) { registered = (id, port) }
                if let registered {
                    if registered.port != worker.port {
                        try await connection.query(
                            "SELECT citus_update_node(\(registered.id), \(worker.socketDirectory), \(Int32(worker.port)))", logger: logger
                        )
                        moved = true
                        logger.info("a Citus worker came back on another port", metadata: [
                            "canopy.cluster.worker": "\(worker.number)", "canopy.cluster.port": "\(worker.port)",
                        ])
                    }
                } else {
                    try await connection.query("SELECT citus_add_node(\(worker.socketDirectory), \(Int32(worker.port)))", logger: logger)
                    logger.info("added a Citus worker", metadata: [
                        "canopy.cluster.worker": "\(worker.number)", "canopy.cluster.database": "\(database)",
                    ])
                }
            }
            if moved {
                // The other nodes learn the new port now, not when Citus's
                // maintenance daemon next syncs: until then a statement that
                // touches them fails ("is a metadata node, but is out of sync").
                try await connection.query("SELECT start_metadata_sync_to_all_nodes()", logger: logger)
            }
        }
    }

    private static func createCitusDatabase(_ database: String, on node: DatabaseEndpoint, logger: Logger) async throws {
        do {
            try await createDatabaseIfMissing(database, on: node, logger: logger)
        } catch {
            throw StoreError(.clusterFailed, "setting up Citus on \(node.displayURL) failed: \(String(reflecting: error))", underlying: error)
        }
        try await withAdminConnection(node.database(database), logger: logger) { connection in
            try await connection.query("CREATE EXTENSION IF NOT EXISTS citus", logger: logger)
        }
    }

    private static func withAdminConnection(
        _ endpoint: DatabaseEndpoint, logger: Logger, _ body: (PostgresConnection) async throws -> Void
    ) async throws {
        let connection = try await PostgresConnection.connect(configuration: endpoint.connectionConfiguration(), id: 0, logger: logger)
        do {
            try await body(connection)
            try await connection.close()
        } catch {
            try? await connection.close()
            throw StoreError(.clusterFailed, "setting up Citus on \(endpoint.displayURL) failed: \(String(reflecting: error))", underlying: error)
        }
    }
}

extension EmbeddedCluster {
    /// Each worker made here: its number, socket directory and port (nil
    /// when it is not running), for `canopy cluster status`.
    public func citusWorkerStatus() throws -> [(number: Int, socketDirectory: String, port: Int?)] {
        try citusWorkerClusters().enumerated().map { index, worker in
            (index + 1, worker.socketDirectory, try worker.status())
        }
    }
}
