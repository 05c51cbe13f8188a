import CanopyEncoding
import CanopyRequestStore
import Crypto
import Foundation
import Logging
import PostgresNIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL cluster that Canopy creates and starts itself under a data
/// directory, so that `make run` and the tests need nothing but PostgreSQL's
/// programs installed. The first command initialises it; later commands
/// find it running and reuse it.
///
/// Layout of the data directory:
/// - `postgres/`: the cluster (PGDATA), owned by the user the server runs as
/// - `run/`: the Unix socket directory (a short one under /tmp if the path
///   would be too long for a socket)
/// - `postgresql.log`: the server's log
/// - `cluster.lock`: serialises initialisation and start-up across processes
/// - `port`: the port it last served on, tried first at the next start, so
///   a restarted cluster keeps its address and running gateways reconnect
///
/// PostgreSQL refuses to run as root. Run as root (CI, these machines), the
/// server programs run as the unprivileged `postgres` user (created by the
/// Debian package), which owns `postgres/`, `run/` and the log.
public struct EmbeddedCluster: Sendable {
    /// The superuser initdb creates; it logs in over the Unix socket only.
    public static let adminUser = "canopy_admin"
    /// The database Canopy's schema lives in.
    public static let databaseName = "canopy"

    public let dataDirectory: String
    public var pgData: String { "\(dataDirectory)/postgres" }
    public var logFile: String { "\(dataDirectory)/postgresql.log" }
    public var replicasDirectory: String { "\(dataDirectory)/replicas" }
    var lockFile: String { "\(dataDirectory)/cluster.lock" }
    var portFile: String { "\(dataDirectory)/port" }

    /// Where the server puts its socket.
    public var socketDirectory: String {
        let preferred = "\(dataDirectory)/run"
        // sockaddr_un holds 108 bytes, including the file name and a NUL.
        if "\(preferred)/.s.PGSQL.65535".utf8.count < 104 { return preferred }
        let digest = Hex.encode(SHA256.hash(data: Data(dataDirectory.utf8)))
        return "/tmp/canopy-\(digest.prefix(16))"
    }

    public init(dataDirectory: String) {
        let url = URL(fileURLWithPath: dataDirectory, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        self.dataDirectory = url.standardizedFileURL.path
    }

    /// A running cluster: how to reach it as the administrator, and whether
    /// this call started it (so the caller may stop it when done).
    public struct Running: Sendable {
        public let adminEndpoint: DatabaseEndpoint
        public let startedNow: Bool
        public let port: Int
        /// A Citus coordinator's workers, running too (empty for a single node).
        public var citusWorkers: [CitusWorker] = []
    }

    /// Initialises the cluster if needed, starts it if it is not running,
    /// and makes sure the `canopy` database exists.
    public func start(logger: Logger) async throws -> Running {
        let programs = try ServerPrograms.locate()
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        return try await FileLock(path: lockFile).withLock {
            let account = try ServerAccount.current()
            if !FileManager.default.fileExists(atPath: "\(pgData)/PG_VERSION") {
                try await initialise(programs: programs, account: account, logger: logger)
            }
            var startedNow = false
            var port = runningPort(programs: programs, account: account)
            if port == nil {
                port = try await launch(programs: programs, account: account, logger: logger)
                startedNow = true
            }
            let endpoint = DatabaseEndpoint(
                transport: .unixSocket(directory: socketDirectory, port: port!),
                username: Self.adminUser, password: nil, database: Self.databaseName
            )
            try await Self.createDatabaseIfMissing(Self.databaseName, on: endpoint, logger: logger)
            var running = Running(adminEndpoint: endpoint, startedNow: startedNow, port: port!)
            if let workerCount = try citusWorkerCount() {
                running.citusWorkers = try await startCitusWorkers(workerCount, logger: logger)
                try await prepareCitusDatabase(Self.databaseName, coordinator: running, logger: logger)
            }
            return running
        }
    }

    /// The port the cluster is serving on, or nil when it is not running.
    public func status() throws -> Int? {
        let programs = try ServerPrograms.locate()
        return runningPort(programs: programs, account: try ServerAccount.current())
    }

    /// How `stop` ends the server (pg_ctl's shutdown modes).
    public enum StopMode: String, Sendable {
        /// Open transactions roll back, a checkpoint is written.
        case fast
        /// As a power cut would: no checkpoint; the next start replays the
        /// WAL. For crash drills and tests; replicas are left running.
        case immediate
    }

    /// Stops the cluster and, in `.fast` mode, its replicas first.
    public func stop(logger: Logger, mode: StopMode = .fast) async throws {
        let programs = try ServerPrograms.locate()
        let account = try ServerAccount.current()
        if mode == .fast {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: replicasDirectory)) ?? [] {
                try await replica(named: name).stop(logger: logger)
            }
        }
        try await FileLock(path: lockFile).withLock {
            guard runningPort(programs: programs, account: account) != nil else { return }
            let result = try await account.run(programs.pgCtl, ["stop", "-D", pgData, "-m", mode.rawValue, "-w", "-t", "60"])
            guard result.succeeded else {
                throw StoreError(.clusterFailed, "pg_ctl stop failed for \(pgData):\n\(result.output)")
            }
            logger.info("stopped the embedded PostgreSQL cluster", metadata: ["canopy.cluster.data_dir": "\(pgData)", "canopy.cluster.stop_mode": "\(mode.rawValue)"])
        }
        // A Citus coordinator's workers after it, so no distributed
        // transaction is left waiting on a worker that went first.
        for worker in citusWorkerClusters() {
            try await worker.stop(logger: logger, mode: mode)
        }
    }

    private func initialise(programs: ServerPrograms, account: ServerAccount, logger: Logger) async throws {
        logger.info("initialising an embedded PostgreSQL cluster", metadata: ["canopy.cluster.data_dir": "\(pgData)"])
        if FileManager.default.fileExists(atPath: pgData) {
            // A previous initdb was interrupted: start over.
            try FileManager.default.removeItem(atPath: pgData)
        }
        try FileManager.default.createDirectory(atPath: pgData, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try account.own(pgData)
        let result = try await account.run(programs.initdb, [
            "-D", pgData, "-U", Self.adminUser, "--auth-local=trust", "--auth-host=scram-sha-256",
            "--encoding=UTF8", "--no-locale", "--no-sync",
        ])
        guard result.succeeded else {
            throw StoreError(.clusterFailed, "initdb failed for \(pgData):\n\(result.output)" + account.reachabilityHint(for: pgData))
        }
        let role = citusRole
        let settings = """

            # Added by canopy: the embedded cluster listens on a Unix socket in
            # its data directory and on loopback; the port is chosen at start.
            # 400 connections: the test suite, all suites at once, opened up
            # to 165 of the former 200.
            listen_addresses = '\(role == .worker ? "" : "127.0.0.1")'
            unix_socket_directories = '\(socketDirectory)'
            max_connections = 400
            shared_buffers = \(role == .worker ? "128MB" : "256MB")
            log_min_messages = warning
            log_line_prefix = '%m [%p] %q%u@%d '

            """ + (role.map { Self.citusSettings($0, socketDirectory: socketDirectory) } ?? "")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(pgData)/postgresql.conf"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        try handle.close()
    }

    func runningPort(programs: ServerPrograms, account: ServerAccount) -> Int? {
        guard FileManager.default.fileExists(atPath: "\(pgData)/postmaster.pid"),
              let status = try? account.runQuickly(programs.pgCtl, ["status", "-D", pgData]), status.succeeded,
              let pidFile = try? String(contentsOfFile: "\(pgData)/postmaster.pid", encoding: .utf8)
        else { return nil }
        let lines = pidFile.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count > 3, let port = Int(lines[3].trimmingCharacters(in: .whitespaces)) else { return nil }
        return port
    }

    func launch(programs: ServerPrograms, account: ServerAccount, logger: Logger) async throws -> Int {
        try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try account.own(socketDirectory)
        if !FileManager.default.fileExists(atPath: logFile) {
            _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        }
        try account.own(logFile)
        if FileManager.default.fileExists(atPath: "\(pgData)/postmaster.pid") {
            logger.notice(
                "the embedded PostgreSQL cluster was not stopped cleanly: it recovers before it answers, which can take minutes",
                metadata: ["canopy.cluster.data_dir": "\(pgData)", "canopy.cluster.log": "\(logFile)"]
            )
        }
        var lastOutput = ""
        // The port it served on last, if any, then free ones.
        let remembered = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        for attempt in 0..<3 {
            let port = try attempt == 0 ? remembered ?? Self.freePort() : Self.freePort()
            // Up to 10 minutes: a cluster stopped uncleanly (a reboot, a kill)
            // syncs its whole data directory before its crash recovery, which
            // took 45 s for a test cluster of a few hundred databases. pg_ctl
            // still fails at once when the server exits instead.
            let result = try await account.run(programs.pgCtl, [
                "start", "-D", pgData, "-l", logFile, "-w", "-t", "600", "-o", "-p \(port)",
            ])
            if result.succeeded {
                try? Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: portFile))
                logger.info(
                    "started the embedded PostgreSQL cluster",
                    metadata: ["canopy.cluster.data_dir": "\(pgData)", "canopy.cluster.port": "\(port)", "canopy.cluster.log": "\(logFile)"]
                )
                return port
            }
            lastOutput = result.output
        }
        let logTail = (try? String(contentsOfFile: logFile, encoding: .utf8))
            .map { $0.split(separator: "\n").suffix(15).joined(separator: "\n") } ?? ""
        throw StoreError(.clusterFailed, "pg_ctl could not start the cluster in \(pgData):\n\(lastOutput)\nlast lines of \(logFile):\n\(logTail)"
                         + account.reachabilityHint(for: pgData))
    }

    /// Creates the database `name` on the server `endpoint` reaches (as its
    /// administrator, through the `postgres` database) unless it exists:
    /// the embedded cluster's own, and each Citus node's.
    static func createDatabaseIfMissing(_ name: String, on endpoint: DatabaseEndpoint, logger: Logger) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: endpoint.database("postgres").connectionConfiguration(), id: 0, logger: logger
        )
        do {
            let rows = try await connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger)
            var exists = false
            for try await _ in rows { exists = true }
            if !exists {
                // A name is an identifier here, not a value: quoted as one.
                let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(quoted)"), logger: logger)
            }
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// A loopback TCP port nothing listens on now, for a cluster or a
    /// server a test starts. Chosen at random below the kernel's ephemeral
    /// range (`ip_local_port_range`), which the kernel never hands out by
    /// itself: a port it picked could be given to another process's
    /// listener or outgoing connection before the caller binds it, and
    /// make test runs two test processes at once (DECISIONS 176: a story's
    /// `canopy serve` lost its port so, and its health check was answered
    /// by another test's gateway). The kernel's pick when that range is
    /// too small.
    public static func freePort() throws -> Int {
        let floor = 10_000
        let ceiling = ephemeralPortsStart() ?? 32_768
        if ceiling - floor >= 1_000 {
            for _ in 0..<200 {
                let candidate = Int.random(in: floor..<ceiling)
                if try bound(to: candidate) != nil { return candidate }
            }
        }
        guard let port = try bound(to: 0) else { throw StoreError(.clusterFailed, "cannot bind a socket to find a free port") }
        return port
    }

    /// The first port of the kernel's ephemeral range, or nil when it cannot be read.
    private static func ephemeralPortsStart() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) else { return nil }
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) }
    }

    /// Binds a loopback socket to `port` (0: the kernel's pick) and closes
    /// it: the port bound, or nil when `port` is taken.
    private static func bound(to port: Int) throws -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StoreError(.clusterFailed, "cannot open a socket to find a free port") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { return nil }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw StoreError(.clusterFailed, "cannot read the free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The account the server programs run as: ourselves, or `postgres` when we
/// are root (PostgreSQL refuses to run as root).
struct ServerAccount {
    let name: String?
    let uid: uid_t
    let gid: gid_t

    static func current() throws -> ServerAccount {
        guard geteuid() == 0 else { return ServerAccount(name: nil, uid: geteuid(), gid: getegid()) }
        guard let entry = getpwnam("postgres") else {
            throw StoreError(
                .clusterFailed,
                "running as root, the embedded PostgreSQL cluster needs an unprivileged 'postgres' user to run as (apt-get install -y postgresql creates it), or use --database-url"
            )
        }
        return ServerAccount(name: "postgres", uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    func own(_ path: String) throws {
        guard name != nil else { return }
        guard chown(path, uid, gid) == 0 else {
            throw StoreError(.clusterFailed, "cannot hand \(path) to the postgres user: \(String(cString: strerror(errno)))")
        }
    }

    /// When we run the server as `postgres`, the first directory above
    /// `path` that `postgres` may not enter, with how to fix it, or "".
    /// A private parent (`mktemp -d` makes them 0700) fails initdb with a
    /// bare "Permission denied".
    func reachabilityHint(for path: String) -> String {
        guard name != nil else { return "" }
        var directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        var ancestors: [String] = []
        while directory.path != "/" && !directory.path.isEmpty {
            ancestors.append(directory.path)
            directory = directory.deletingLastPathComponent()
        }
        for ancestor in ancestors.reversed() {
            var info = stat()
            guard stat(ancestor, &info) == 0 else { continue }
            let searchable = info.st_uid == uid ? info.st_mode & S_IXUSR != 0
                : info.st_gid == gid ? info.st_mode & S_IXGRP != 0 : info.st_mode & S_IXOTH != 0
            if !searchable {
                return "\nthe server runs as the postgres user, which cannot enter \(ancestor) (mode \(String(info.st_mode & 0o777, radix: 8))): "
                    + "make it searchable (chmod o+x \(ancestor)) or pick a --data-dir postgres can reach"
            }
        }
        return ""
    }

    /// Runs `program` as the account, holding the calling thread: only for
    /// what answers at once (`pg_ctl status`), from synchronous code.
    func runQuickly(_ program: String, _ arguments: [String]) throws -> Subprocess.Result {
        let command = try asAccount(program, arguments)
        return try Subprocess.run(command.program, command.arguments)
    }

    /// Runs `program` as the account, without holding a cooperative thread
    /// while it runs (`pg_ctl start -w` may wait out a crash recovery).
    func run(_ program: String, _ arguments: [String]) async throws -> Subprocess.Result {
        let command = try asAccount(program, arguments)
        return try await Subprocess.output(of: command.program, command.arguments)
    }

    /// `program` as is, or through runuser as the server's account, from
    /// "/" (that account may not be able to read our directory).
    private func asAccount(_ program: String, _ arguments: [String]) throws -> (program: String, arguments: [String]) {
        guard let name else { return (program, arguments) }
        let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let runuser else {
            throw StoreError(.clusterFailed, "running as root needs runuser (util-linux) to start PostgreSQL as \(name)")
        }
        return (runuser, ["-u", name, "--", "/bin/sh", "-c", "cd / && exec \"$@\"", "sh", program] + arguments)
    }
}
