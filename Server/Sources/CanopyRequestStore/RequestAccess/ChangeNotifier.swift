import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Tells live subscriptions that something committed: one `LISTEN
/// canopy_changes` connection per gateway process, shared by every
/// subscriber, opened when the first one arrives. A notification names only
/// a zone and its owner; subscribers read what changed themselves, as their
/// user, so nothing here can show anyone a row.
///
/// A listening connection sends nothing of its own, so a link that stops
/// carrying packets (a partition, a server restarted behind it) would leave
/// it waiting forever. Every `heartbeat` it is asked a `SELECT 1`; no answer
/// within `heartbeat` again and the connection is closed and replaced, and
/// the new one's `resync` makes every subscriber read again from its own
/// position, so a change that committed meanwhile is not missed.
public final class ChangeNotifier: Service, Sendable {
    /// What a subscriber is told.
    public enum Event: Sendable, Equatable {
        /// A transaction that changed this zone (owned by `owner`) committed.
        case zone(id: Int64, owner: Int64)
        /// The listening connection (re)started: anything may have been
        /// missed, so every subscriber should look again.
        case resync
        /// A commit wrote the push outbox (canopy.touch_zone): the push
        /// deliverer has work.
        case push
    }

    private struct Subscriber {
        var wants: @Sendable (Event) -> Bool
        var continuation: AsyncStream<Void>.Continuation
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        var demand: AsyncStream<Void>.Continuation?
        var listening = false
    }

    private let primary: PrimaryPool
    /// On Citus, how to reach every node (the gateway's endpoint, its host
    /// and port replaced by each worker's): nil on one PostgreSQL.
    private let citusEndpoint: DatabaseEndpoint?
    /// On Citus, how often the list of workers is read again.
    let nodeRefresh: Duration
    private let logger: Logger
    private let state = Mutex(State())
    private let demand: AsyncStream<Void>
    /// How often the listening connection is checked, and how long its answer may take.
    public let heartbeat: Duration

    /// - Parameter citusEndpoint: on a Citus coordinator, the endpoint the
    ///   gateway connects with: the listener then listens on every worker
    ///   too (DECISIONS 150), reading the workers from `pg_dist_node` again
    ///   every `nodeRefresh`.
    public init(
        primary: PrimaryPool, heartbeat: Duration = .seconds(5), citusEndpoint: DatabaseEndpoint? = nil,
        nodeRefresh: Duration = .seconds(30), logger: Logger
    ) {
        self.primary = primary
        self.citusEndpoint = citusEndpoint
        self.nodeRefresh = nodeRefresh
        self.heartbeat = heartbeat
        self.logger = logger
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        demand = stream
        state.withLock { $0.demand = continuation }
    }

    /// Wake-ups for one subscriber: one element whenever an event it
    /// `wants` arrives (several while it is busy count as one, since a
    /// wake-up only means "read again"), and the id to end it with.
    public func subscribe(wants: @escaping @Sendable (Event) -> Bool) -> (id: Int, wakeUps: AsyncStream<Void>) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (id, wake) = state.withLock { state -> (Int, AsyncStream<Void>.Continuation?) in
            state.nextID += 1
            state.subscribers[state.nextID] = Subscriber(wants: wants, continuation: continuation)
            return (state.nextID, state.listening ? nil : state.demand)
        }
        wake?.yield()
        return (id, stream)
    }

    public func unsubscribe(_ id: Int) {
        let subscriber = state.withLock { $0.subscribers.removeValue(forKey: id) }
        subscriber?.continuation.finish()
    }

    /// How many subscribers are registered (for metrics and tests).
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    private func broadcast(_ event: Event) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers where event == .resync || subscriber.wants(event) {
            subscriber.continuation.yield()
        }
    }

    /// Waits for the first subscriber, then listens until graceful
    /// shutdown (which ends it without an error), reconnecting after a failure.
    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var wakeUps = self.demand.makeAsyncIterator()
            guard await wakeUps.next() != nil else { return }
            self.state.withLock { $0.listening = true }
            while !Task.isCancelled {
                do {
                    if let citusEndpoint = self.citusEndpoint {
                        try await self.listenOnEveryNode(citusEndpoint)
                    } else {
                        // The primary now: after a failover, the new one.
                        try await self.primary.sharedClient().withConnection { connection in
                            try await self.listen(on: connection)
                        }
                    }
                } catch where !Task.isCancelled {
                    self.logger.warning("change notifications interrupted; reconnecting", metadata: ["canopy.error": "\(String(reflecting: error))"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
        let subscribers = state.withLock { state -> [Subscriber] in
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
    }

    /// Listens on `connection` until it fails or stops answering its
    /// heartbeat (then it is closed, and this throws).
    private func listen(on connection: PostgresConnection) async throws {
        try await connection.listen(on: "canopy_changes") { notifications in
            self.broadcast(.resync)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await notification in notifications {
                        if let event = Self.event(from: notification.payload) { self.broadcast(event) }
                    }
                    throw StoreError(.databaseUnavailable, "the change notifications ended")
                }
                group.addTask {
                    while true {
                        try await Task.sleep(for: self.heartbeat)
                        do {
                            _ = try await withTimeout(self.heartbeat) {
                                // Named, so an operator can tell the listener in pg_stat_activity.
                                try await connection.query("SELECT 1 AS canopy_listener_heartbeat", logger: self.logger).collect()
                            }
                        } catch {
                            self.logger.warning("the change listener's connection did not answer its heartbeat; replacing it", metadata: [
                                "canopy.heartbeat": "\(self.heartbeat)", "canopy.error": "\(String(reflecting: error))",
                            ])
                            try? await connection.close()
                            throw StoreError(.databaseUnavailable, "the listening connection did not answer its heartbeat within \(self.heartbeat); replacing it", underlying: error)
                        }
                    }
                }
                // Neither child ends but by throwing.
                _ = try await group.next()
                group.cancelAll()
            }
        }
    }

    /// On Citus (DECISIONS 150): a trigger's NOTIFY is heard only on the
    /// node whose shard it fired on, so the listener keeps a connection to
    /// the coordinator and one to each worker. Each node's listener
    /// reconnects on its own when it fails (a new connection tells every
    /// subscriber to read again, as on one PostgreSQL), so a worker that is
    /// down leaves the others heard. Every `nodeRefresh` the worker list is
    /// read again; a change (a worker added, moved or removed) restarts them
    /// all on the new list.
    private func listenOnEveryNode(_ endpoint: DatabaseEndpoint) async throws {
        let workers = try await primary.withConnection { connection in
            try await Self.workers(on: connection, logger: self.logger)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await self.keepListening(node: "the coordinator") {
                    try await self.primary.sharedClient().withConnection { connection in
                        try await self.listen(on: connection)
                    }
                }
            }
            for transport in workers {
                var node = endpoint
                node.transport = transport
                node.otherHosts = []
                let worker = node
                group.addTask {
                    try await self.keepListening(node: worker.displayURL) {
                        let connection = try await PostgresConnection.connect(
                            configuration: try worker.connectionConfiguration(), id: 0, logger: self.logger
                        )
                        do {
                            try await self.listen(on: connection)
                        } catch {
                            try? await connection.close()
                            throw error
                        }
                    }
                }
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: self.nodeRefresh)
                    let now = try? await self.primary.withConnection { connection in
                        try await Self.workers(on: connection, logger: self.logger)
                    }
                    if let now, now != workers {
                        throw StoreError(.databaseUnavailable, "the Citus workers changed; listening on the new list")
                    }
                }
            }
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// Runs `listen` again a second after each failure, until cancelled.
    private func keepListening(node: String, _ listen: @escaping @Sendable () async throws -> Void) async throws {
        while !Task.isCancelled {
            do {
                try await listen()
            } catch where !Task.isCancelled {
                logger.warning("change notifications from a Citus node interrupted; reconnecting", metadata: [
                    "canopy.node": "\(node)", "canopy.error": "\(String(reflecting: error))",
                ])
                try await Task.sleep(for: .seconds(1))
            }
        }
        throw CancellationError()
    }

    /// The Citus workers a notification may come from: every active
    /// primary but the coordinator, as `pg_dist_node` names them (a host, or
    /// a socket directory in the development cluster).
    static func workers(on connection: PostgresConnection, logger: Logger) async throws -> [DatabaseEndpoint.Transport] {
        let rows = try await connection.query(
            "SELECT nodename, nodeport FROM pg_dist_node WHERE isactive AND noderole = 'primary' AND groupid <> 0 ORDER BY nodename, nodeport",
            logger: logger
        )
        var workers: [DatabaseEndpoint.Transport] = []
        for try await (name, port) in rows.decode((String, Int32).self) {
            workers.append(name.hasPrefix("/") ? .unixSocket(directory: name, port: Int(port)) : .tcp(host: name, port: Int(port)))
        }
        return workers
    }

    /// `'<zone id> <owner id>'` or `'push'`, as canopy.touch_zone sends them.
    static func event(from payload: String) -> Event? {
        if payload == "push" { return .push }
        let parts = payload.split(separator: " ")
        guard parts.count == 2, let zone = Int64(parts[0]), let owner = Int64(parts[1]) else { return nil }
        return .zone(id: zone, owner: owner)
    }
}
