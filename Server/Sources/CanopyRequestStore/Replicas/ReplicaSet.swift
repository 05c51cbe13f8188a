import CanopyEncoding
import CanopyWAL
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The streaming replicas reads may go to (`--replica-url`, docs/API.md §13), and
/// the rules that keep a reader from going back in time:
///
/// - A read that needs a position (the caller's last write on this gateway,
///   a change token's, the `Canopy-Position` header) goes to a replica known
///   to have replayed it. When none has, it waits up to `wait` for the most
///   current replica, if that one is close, then the primary answers.
/// - A replica more than `maximumLag` behind the primary, or that does not
///   answer, is out of rotation until it catches up; a replica that is no
///   longer in recovery (promoted) is out too.
/// - A read that fails on a replica for want of it (gone, restarting,
///   cancelled by recovery) is run again on the primary.
///
/// The set is a service of the app: it runs the replicas' pools and samples
/// the primary's and each replica's position every `pollInterval`.
public final class ReplicaSet: Service, Sendable {
    /// How long a read waits for a replica, how far behind one may be.
    public struct Settings: Sendable {
        /// How long a read that needs a position waits for a replica to
        /// replay it before the primary answers (0: never wait).
        public var wait: Duration
        /// A replica further behind than this is out of rotation.
        public var maximumLag: Duration
        /// How often positions are sampled.
        public var pollInterval: Duration

        public init(wait: Duration = .milliseconds(100), maximumLag: Duration = .seconds(5), pollInterval: Duration = .milliseconds(200)) {
            self.wait = wait
            self.maximumLag = maximumLag
            self.pollInterval = pollInterval
        }
    }

    /// One replica: its pool and what was last learned of it.
    public final class Replica: Sendable {
        /// Its URL without a password, for logs.
        public let name: String
        /// Its shared pool: sampling, and reads not made on a serving loop.
        let client: PostgresClient
        /// Serving on the sockets' loops, a pool per loop (``ServingLoops``).
        let loopClients: [PostgresClient]
        let loops: ServingLoops?
        let state = Mutex(State())

        struct State {
            var replayed: WALPosition?
            var inRotation = false
            /// How far behind the primary the last sample found it.
            var lag: Duration = .zero
        }

        init(name: String, client: PostgresClient, loops: ServingLoops? = nil, loopClients: [PostgresClient] = []) {
            self.name = name
            self.client = client
            self.loops = loops
            self.loopClients = loopClients
        }

        /// The pool a read made here uses: the caller's loop's, on a serving loop.
        var readClient: PostgresClient {
            if let loops, let slot = loops.current { return loopClients[slot] }
            return client
        }

        public var isInRotation: Bool { state.withLock { $0.inRotation } }

        /// Asks the replica how far it has replayed (and remembers it).
        func replayedNow(logger: Logger) async throws -> WALPosition? {
            let rows = try await client.query("SELECT pg_last_wal_replay_lsn()::text", logger: logger)
            for try await text in rows.decode(String?.self) {
                let position = text.flatMap(WALPosition.init)
                if let position { state.withLock { $0.replayed = Swift.max($0.replayed ?? position, position) } }
                return position
            }
            return nil
        }
    }

    public let replicas: [Replica]
    public let settings: Settings
    private let primary: PrimaryPool
    private let logger: Logger
    /// The primary's position over the last `maximumLag` and a little more.
    private let samples = Mutex<[(time: ContinuousClock.Instant, position: WALPosition)]>([])
    /// Each user's last write through this gateway, for as long as a replica
    /// in rotation might not have replayed it (see `rememberWrites`).
    private let writes = Mutex<[Int64: (position: WALPosition, time: ContinuousClock.Instant)]>([:])
    private let turn = Atomic<Int>(0)
    private let primaryProbe = Mutex<(started: ContinuousClock.Instant, task: Task<WALPosition?, Never>)?>(nil)

    /// A position no server reaches: a write whose position could not be
    /// read is remembered as this, so its writer reads from the primary.
    public static let unknownPosition = WALPosition(.max)

    /// - Parameters:
    ///   - endpoints: the replicas, each reached as `endpoint` says.
    ///   - loops: serving on the sockets' loops, each replica also gets a
    ///     pool of `loopConnections` per loop, as the primary does.
    public init(primary: PrimaryPool, endpoints: [DatabaseEndpoint], maximumConnections: Int,
                connectTimeout: Duration, startupParameters: [(String, String)], settings: Settings,
                loops: ServingLoops? = nil, loopConnections: Int = 2, logger: Logger) throws {
        self.primary = primary
        self.settings = settings
        self.logger = logger
        self.replicas = try endpoints.map { endpoint in
            var configuration = try endpoint.clientConfiguration()
            configuration.options.maximumConnections = maximumConnections
            configuration.options.connectTimeout = connectTimeout
            configuration.options.additionalStartupParameters = startupParameters
            let loopClients = (loops?.loops ?? []).enumerated().map { slot, loop in
                var own = configuration
                own.options.maximumConnections = max(1, loopConnections)
                own.options.additionalStartupParameters.append(("application_name", "canopy loop \(slot)"))
                return PostgresClient(configuration: own, eventLoopGroup: loop, backgroundLogger: logger)
            }
            return Replica(name: endpoint.displayURL, client: PostgresClient(configuration: configuration, backgroundLogger: logger),
                           loops: loops, loopClients: loopClients)
        }
    }

    /// How long a write is remembered: after it, every replica in rotation
    /// has replayed it (rotation asks for the primary's position of
    /// `maximumLag` ago, sampled every `pollInterval`).
    var rememberWrites: Duration { settings.maximumLag + settings.pollInterval * 2 + .seconds(1) }

    // MARK: Writes

    /// Notes that `userID` wrote, committed at or before `position`.
    public func noteWrite(by userID: Int64, at position: WALPosition?) {
        let position = position ?? Self.unknownPosition
        writes.withLock { writes in
            let earlier = writes[userID]?.position
            writes[userID] = (Swift.max(earlier ?? position, position), .now)
        }
    }

    /// The position `userID`'s reads need because of their own writes here.
    public func lastWrite(of userID: Int64) -> WALPosition? {
        writes.withLock { writes in
            guard let entry = writes[userID] else { return nil }
            return entry.time.duration(to: .now) < rememberWrites ? entry.position : nil
        }
    }

    // MARK: Choosing

    /// A replica to read from that has replayed `required` (any replica in
    /// rotation when nil), waiting up to `settings.wait` for a close one;
    /// nil: read from the primary.
    public func replica(after required: WALPosition?, logger: Logger) async -> Replica? {
        let ready = replicas.filter(\.isInRotation)
        guard !ready.isEmpty, required != Self.unknownPosition else { return nil }
        let start = turn.wrappingAdd(1, ordering: .relaxed).oldValue
        guard let required else { return ready[start % ready.count] }
        for offset in ready.indices {
            let replica = ready[(start + offset) % ready.count]
            if let replayed = replica.state.withLock({ $0.replayed }), replayed >= required { return replica }
        }
        // None is known to be there yet: ask the most current one again, for
        // a while, unless it is further behind than the wait.
        guard settings.wait > .zero,
              let best = ready.max(by: { ($0.state.withLock { $0.replayed } ?? WALPosition(0)) < ($1.state.withLock { $0.replayed } ?? WALPosition(0)) }),
              best.state.withLock({ $0.lag }) < settings.wait
        else { return nil }
        let deadline = ContinuousClock.now + settings.wait
        while ContinuousClock.now < deadline {
            guard let replayed = try? await withTimeout(settings.wait, { try await best.replayedNow(logger: logger) }) ?? nil
            else { return nil }
            if replayed >= required { return best }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }

    /// Takes a replica out of rotation after a read failed on it for want of
    /// it; the next sample that finds it well puts it back.
    public func takeOut(_ replica: Replica, because error: any Error) {
        let wasIn = replica.state.withLock { state in
            defer { state.inRotation = false }
            return state.inRotation
        }
        if wasIn {
            logger.warning("replica out of rotation", metadata: ["canopy.replica": "\(replica.name)", "canopy.error": "\(PostgresErrors.message(of: error))"])
        }
    }

    /// Whether a read's failure on a replica says more about the replica than
    /// about the read, so the primary should be asked instead: unreachable,
    /// shutting down or starting, cancelled by a conflict with recovery,
    /// out of resources, or read-only (a statement that writes).
    public static func isReplicaFault(_ error: any Error) -> Bool {
        if let store = error as? StoreError { return store.code == .databaseUnavailable }
        if PostgresErrors.isConnectionFailure(error) { return true }
        guard let state = PostgresErrors.sqlState(of: error) else { return false }
        return ["40", "57", "53", "58", "25"].contains(String(state.prefix(2)))
    }

    // MARK: The primary's position

    /// The primary's position now, from a probe that started no earlier than
    /// this call (concurrent callers share one): a subscriber woken by a
    /// commit reads from a replica only once it has replayed this far.
    public func primaryPosition(logger: Logger) async -> WALPosition? {
        let asked = ContinuousClock.now
        let task = primaryProbe.withLock { probe -> Task<WALPosition?, Never> in
            if let probe, probe.started >= asked { return probe.task }
            let task = Task { [primary] in try? await primary.withConnection { try await Self.position(on: $0, logger: logger) } }
            probe = (asked, task)
            return task
        }
        return await task.value
    }

    /// Where the server of `connection` stands (`canopy.read_position()`).
    static func position(on connection: PostgresConnection, logger: Logger) async throws -> WALPosition? {
        let rows = try await connection.query("SELECT canopy.read_position()", logger: logger).collect()
        return try rows.first?.decode(String?.self).flatMap(WALPosition.init)
    }

    // MARK: Sampling

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for replica in replicas {
                for client in [replica.client] + replica.loopClients {
                    group.addTask { await client.run() }
                }
            }
            try? await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    await self.sample()
                    try await Task.sleep(for: self.settings.pollInterval)
                }
            }
            // The replicas' pools stop with the sampler.
            group.cancelAll()
        }
    }

    /// One round: the primary's position, then each replica's.
    func sample() async {
        let now = ContinuousClock.now
        let timeout = max(settings.pollInterval * 4, .seconds(1))
        if let position = try? await withTimeout(timeout, {
            try await self.primary.withConnection { [logger = self.logger] in try await Self.position(on: $0, logger: logger) }
        }) {
            let keep = settings.maximumLag + .seconds(10)
            samples.withLock { samples in
                samples.append((now, position))
                // Keep one sample older than the lag bound, and what is newer.
                while samples.count > 1, samples[1].time.duration(to: now) > keep { samples.removeFirst() }
            }
            let forget = rememberWrites
            writes.withLock { writes in
                if writes.count > 1000 || writes.values.contains(where: { $0.time.duration(to: now) >= forget }) {
                    writes = writes.filter { $0.value.time.duration(to: now) < forget }
                }
            }
        }
        let history = samples.withLock { $0 }
        await withTaskGroup(of: Void.self) { group in
            for replica in replicas {
                group.addTask {
                    let reading = try? await withTimeout(timeout) { () async throws -> (Bool, String?)? in
                        let rows = try await replica.client.query("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text", logger: self.logger)
                        for try await row in rows.decode((Bool, String?).self) { return row }
                        return nil
                    }
                    self.judge(replica, reading: reading.flatMap { $0 }, history: history, now: now)
                }
            }
        }
    }

    /// Puts a replica in or out of rotation from what a sample found.
    func judge(_ replica: Replica, reading: (inRecovery: Bool, replayed: String?)?, history: [(time: ContinuousClock.Instant, position: WALPosition)], now: ContinuousClock.Instant) {
        var verdict: (in: Bool, why: String)
        var lag = Duration.zero
        let replayed = reading?.replayed.flatMap(WALPosition.init)
        if reading == nil {
            verdict = (false, "does not answer")
        } else if reading?.inRecovery == false {
            verdict = (false, "is not a standby (promoted?)")
        } else if let replayed {
            // The primary's position `maximumLag` ago (or the oldest known,
            // which asks for more): a replica in rotation has replayed it.
            let bar = history.last { $0.time.duration(to: now) >= settings.maximumLag } ?? history.first
            if let bar, replayed < bar.position {
                verdict = (false, "is more than \(settings.maximumLag) behind the primary")
            } else {
                verdict = (true, "")
            }
            if let newest = history.last, replayed < newest.position {
                let reached = history.last { $0.position <= replayed }?.time ?? history.first?.time ?? now
                lag = reached.duration(to: now)
            }
        } else {
            verdict = (false, "has not replayed anything")
        }
        let was = replica.state.withLock { state -> Bool in
            let was = state.inRotation
            state.inRotation = verdict.in
            // A sample is the truth (a replica made again starts lower).
            state.replayed = replayed
            state.lag = lag
            return was
        }
        if was != verdict.in {
            if verdict.in {
                logger.info("replica in rotation", metadata: ["canopy.replica": "\(replica.name)"])
            } else {
                logger.warning("replica out of rotation: it \(verdict.why)", metadata: ["canopy.replica": "\(replica.name)"])
            }
        }
    }
}
