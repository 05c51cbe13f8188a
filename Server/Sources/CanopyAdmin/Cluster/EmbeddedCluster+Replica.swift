import CanopyRequestStore
import Foundation
import Logging

/// Streaming replicas of the embedded cluster (issue 19), so a developer
/// and the tests can run a primary and replicas on one machine: each is an
/// embedded cluster of its own under `replicas/<name>/` in the primary's
/// data directory, made once with `pg_basebackup -R` (a hot standby that
/// streams the primary's WAL) and started on its own socket and port.
extension EmbeddedCluster {
    /// The replica called `name` (it may not exist yet).
    public func replica(named name: String) -> EmbeddedCluster {
        EmbeddedCluster(dataDirectory: "\(replicasDirectory)/\(name)")
    }

    /// Starts the primary if needed, makes the replica `name` on first use,
    /// points it at the primary's current port and starts it. Names are
    /// 1–32 of a–z, 0–9, `_`; the replica reports to the primary under it
    /// (`pg_stat_replication.application_name`).
    public func startReplica(named name: String, logger: Logger) async throws -> Running {
        guard name.range(of: "^[a-z0-9_]{1,32}$", options: .regularExpression) != nil else {
            throw StoreError(.invalidConfiguration, "a replica's name is 1-32 of a-z, 0-9 and _, not '\(name)'")
        }
        let primary = try await start(logger: logger)
        let programs = try ServerPrograms.locate()
        let account = try ServerAccount.current()
        let replica = replica(named: name)
        try FileManager.default.createDirectory(atPath: replica.dataDirectory, withIntermediateDirectories: true)
        return try await FileLock(path: replica.lockFile).withLock {
            if !FileManager.default.fileExists(atPath: "\(replica.pgData)/PG_VERSION") {
                try await makeReplica(replica, name: name, primaryPort: primary.port, programs: programs, account: account, logger: logger)
            }
            var startedNow = false
            var port = replica.runningPort(programs: programs, account: account)
            if port == nil {
                // The primary's port is chosen when it starts: follow it.
                try replica.setPrimaryConnection(to: self, port: primary.port, name: name)
                port = try await replica.launch(programs: programs, account: account, logger: logger)
                startedNow = true
            }
            let endpoint = DatabaseEndpoint(
                transport: .unixSocket(directory: replica.socketDirectory, port: port!),
                username: Self.adminUser, password: nil, database: Self.databaseName
            )
            return Running(adminEndpoint: endpoint, startedNow: startedNow, port: port!)
        }
    }

    private func makeReplica(
        _ replica: EmbeddedCluster, name: String, primaryPort: Int, programs: ServerPrograms, account: ServerAccount, logger: Logger
    ) async throws {
        logger.info("making a streaming replica of the embedded cluster", metadata: ["canopy.cluster.replica": "\(replica.pgData)"])
        if FileManager.default.fileExists(atPath: replica.pgData) {
            // An earlier pg_basebackup was interrupted: start over.
            try FileManager.default.removeItem(atPath: replica.pgData)
        }
        try account.own(replica.dataDirectory)
        let result = try await account.run(programs.pgBasebackup, [
            "-h", socketDirectory, "-p", String(primaryPort), "-U", Self.adminUser,
            "-D", replica.pgData, "-R", "-X", "stream", "-c", "fast", "--no-sync",
        ])
        guard result.succeeded else {
            try? FileManager.default.removeItem(atPath: replica.pgData)
            throw StoreError(.clusterFailed, "pg_basebackup could not copy \(pgData) to \(replica.pgData):\n\(result.output)")
        }
        // The copy holds the primary's settings: the replica listens on its own socket.
        let settings = """

            # Added by canopy: this is the streaming replica '\(name)' of \(pgData).
            unix_socket_directories = '\(replica.socketDirectory)'
            hot_standby = on

            """
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(replica.pgData)/postgresql.conf"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        try handle.close()
    }

    /// Rewrites `primary_conninfo` (which `pg_basebackup -R` put in
    /// postgresql.auto.conf) for the primary's socket and current port.
    private func setPrimaryConnection(to primary: EmbeddedCluster, port: Int, name: String) throws {
        let path = "\(pgData)/postgresql.auto.conf"
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { !$0.hasPrefix("primary_conninfo") }
        while lines.last == "" { lines.removeLast() }
        lines.append("primary_conninfo = 'host=\(primary.socketDirectory) port=\(port) user=\(Self.adminUser) application_name=\(name)'")
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
    }
}
