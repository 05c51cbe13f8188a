import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The gateway's connections to the primary, and the rules that keep a
/// request from hanging when there is none (docs/API.md §13):
///
/// - With one server, its pool. With several (a multi-host URL, as under
///   pg_auto_failover or Patroni), a pool per server and a probe that finds
///   which one is the primary (`pg_is_in_recovery()` false; the first in the
///   URL's order if several say so, as libpq's
///   `target_session_attrs=read-write`), every `probeInterval` and at once
///   when a request fails for want of it. The gateway follows a failover
///   without a restart.
/// - While no server is the primary, a request fails at once with
///   `databaseUnavailable` (503 with `Retry-After`).
/// - A request that gets no connection within `availabilityTimeout`, or no
///   answer within `statementTimeout` and a little more, fails the same way
///   (PostgresNIO's pool would wait a minute for a server that is gone).
///
/// Serving on the sockets' loops (``ServingLoops``), each server also has a
/// pool per loop whose connections live on that loop: a request running on
/// a loop is given its loop's pool, anything else (background work, a
/// request that is not pinned) the server's shared pool.
public final class PrimaryPool: Service, Sendable {
    let pools: [PostgresClient]
    /// Per server, a pool per serving loop, in ``ServingLoops/loops``'
    /// order; empty when not serving on loops.
    let loopPools: [[PostgresClient]]
    let loops: ServingLoops?
    /// How many times a caller on a serving loop was given its loop's pool
    /// (for tests and the on-loop tier: that requests do reach them).
    public var loopLeases: Int { loopLeaseCount.load(ordering: .relaxed) }
    private let loopLeaseCount = Atomic<Int>(0)
    /// The servers, for logs and errors.
    public let servers: [String]
    let availabilityTimeout: Duration
    /// How long an answer may take once a connection is had.
    public let answerTimeout: Duration
    let probeInterval: Duration
    let logger: Logger
    /// The primary's index in `pools`; -1: none known.
    private let primaryIndex: Atomic<Int>
    /// Set by a request that failed for want of the primary: probe now.
    private let lookAgain = Atomic<Bool>(false)

    public init(
        endpoint: DatabaseEndpoint, configure: (inout PostgresClient.Configuration) -> Void,
        availabilityTimeout: Duration, statementTimeout: Duration, probeInterval: Duration = .milliseconds(500),
        loops: ServingLoops? = nil, loopConnections: Int = 2, logger: Logger
    ) throws {
        pools = try endpoint.hosts.indices.map { index in
            var configuration = try endpoint.host(index).clientConfiguration()
            configure(&configuration)
            return PostgresClient(configuration: configuration, backgroundLogger: logger)
        }
        self.loops = loops
        loopPools = try endpoint.hosts.indices.map { index in
            try (loops?.loops ?? []).enumerated().map { slot, loop in
                var configuration = try endpoint.host(index).clientConfiguration()
                configure(&configuration)
                configuration.options.maximumConnections = max(1, loopConnections)
                // What an operator sees in pg_stat_activity.
                configuration.options.additionalStartupParameters.append(("application_name", "canopy loop \(slot)"))
                // A one-loop group: every connection of this pool on `loop`.
                return PostgresClient(configuration: configuration, eventLoopGroup: loop, backgroundLogger: logger)
            }
        }
        servers = endpoint.hosts.indices.map { endpoint.host($0).displayURL }
        self.availabilityTimeout = availabilityTimeout
        self.answerTimeout = statementTimeout + .seconds(2)
        self.probeInterval = probeInterval
        self.logger = logger
        // The first server until the first probe says otherwise.
        primaryIndex = Atomic(0)
    }

    /// The primary's pool (the caller's loop's, on a serving loop);
    /// `databaseUnavailable` while there is none.
    public func client() throws -> PostgresClient {
        let index = try primaryIndexOrThrow()
        if let loops, let slot = loops.current {
            loopLeaseCount.add(1, ordering: .relaxed)
            return loopPools[index][slot]
        }
        return pools[index]
    }

    /// The primary's shared pool, wherever the caller runs: for work that
    /// holds a connection for long (the change listener).
    public func sharedClient() throws -> PostgresClient {
        pools[try primaryIndexOrThrow()]
    }

    private func primaryIndexOrThrow() throws -> Int {
        let index = primaryIndex.load(ordering: .relaxed)
        guard index >= 0 else {
            throw StoreError(.databaseUnavailable, "no primary among \(servers.joined(separator: ", ")) (a failover in progress?)")
        }
        return index
    }

    /// The primary's address (without a password), for spans and logs.
    public func server() throws -> String {
        let index = primaryIndex.load(ordering: .relaxed)
        guard index >= 0 else { throw StoreError(.databaseUnavailable, "no primary") }
        return servers[index]
    }

    /// How long a request waits for a connection, then for its answer.
    public var deadlines: (connection: Duration, answer: Duration) { (availabilityTimeout, answerTimeout) }

    /// Runs `body` on a connection to the primary, within the timeouts; a
    /// failure that says the primary is gone or no longer the primary
    /// becomes `databaseUnavailable` and makes the probe look again.
    public func withConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let client = try client()
        do {
            return try await client.withConnection(within: availabilityTimeout, answerWithin: answerTimeout, body)
        } catch {
            guard Self.meansNoPrimary(error) else { throw error }
            lookAgain.store(true, ordering: .relaxed)
            if error is StoreError { throw error }
            throw StoreError(.databaseUnavailable, "the database is unavailable: \(PostgresErrors.message(of: error))", underlying: error)
        }
    }

    /// Whether an error says the server is gone, going, starting, or not the
    /// primary (a read-only transaction: it was demoted): worth retrying
    /// once a primary is found, so a 503.
    static func meansNoPrimary(_ error: any Error) -> Bool {
        if let store = error as? StoreError { return store.code == .databaseUnavailable }
        if PostgresErrors.isConnectionFailure(error) { return true }
        if String(describing: error).contains("connectionCreationCircuitBreakerTripped") { return true }
        guard let state = PostgresErrors.sqlState(of: error) else { return false }
        return state == "25006" || state == "57P01" || state == "57P02" || state == "57P03"
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for pool in pools + loopPools.joined() {
                group.addTask { await pool.run() }
            }
            if pools.count > 1 {
                try? await cancelWhenGracefulShutdown {
                    try await self.probeUntilCancelled()
                }
            } else {
                try? await gracefulShutdown()
            }
            group.cancelAll()
        }
    }

    private func probeUntilCancelled() async throws {
        let slice = Duration.milliseconds(25)
        while !Task.isCancelled {
            await probe()
            // Sleep the interval, or less when a request asks to look again.
            var slept = Duration.zero
            while slept < probeInterval, !lookAgain.exchange(false, ordering: .relaxed) {
                try await Task.sleep(for: slice)
                slept += slice
            }
        }
    }

    /// Asks every server whether it is in recovery; the first that is not
    /// is the primary.
    func probe() async {
        let timeout = max(availabilityTimeout / 5, .milliseconds(500))
        let answers = await withTaskGroup(of: (Int, String).self) { group in
            for (index, pool) in pools.enumerated() {
                group.addTask {
                    let standby = try? await withTimeout(timeout) { () async throws -> Bool? in
                        let rows = try await pool.query("SELECT pg_is_in_recovery()", logger: self.logger)
                        for try await value in rows.decode(Bool.self) { return value }
                        return nil
                    }
                    switch standby {
                    case false?: return (index, "primary")
                    case true?: return (index, "standby")
                    default: return (index, "no answer")
                    }
                }
            }
            return await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
        }
        let found = pools.indices.first { answers[$0] == "primary" } ?? -1
        let before = primaryIndex.exchange(found, ordering: .relaxed)
        if before != found {
            if found >= 0 {
                logger.notice("primary found", metadata: ["canopy.database": "\(servers[found])"])
            } else {
                let states = pools.indices.map { "\(servers[$0]): \(answers[$0] ?? "no answer")" }
                logger.error("no primary; answering 503 until one is found", metadata: ["canopy.servers": "\(states)"])
            }
        }
    }
}
