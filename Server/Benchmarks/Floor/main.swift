// The stack's floor (issue 18): Hummingbird 2 and PostgresNIO doing the
// least a gateway request can do on this machine. One route, POST any path:
// runs one statement (the one the gateway sends for a workload, captured by
// scripts/bench/bench.py, identity and all) with fixed parameters, and
// writes its first text column (the answer's JSON) as `{"data":{KEY:…}}`. No GraphQL, no
// authentication, no logs or metrics: what is left is the HTTP server, the
// pool, one round trip and the JSON.
//
//   canopy-floor PORT SOCKET_DIR PG_PORT STATEMENT_FILE KEY [PARAMETER ...]
//
// It connects as canopy_gateway (no password) to database canopy through
// the Unix socket in SOCKET_DIR, as `canopy serve` and pgbench do with the
// embedded cluster.
// STATEMENT_FILE holds the SQL text with $1…$n; each PARAMETER is bound as
// text (as pgbench binds them); the word NULL binds NULL. The statement is
// prepared on each connection once (as the gateway prepares its shapes),
// and Swift concurrency runs on its default executor (as in `canopy serve`).
//
// CANOPY_FLOOR_ON_LOOP=1 (issue 51's stretch question): each request's
// handler runs on the event loop that owns its socket (a task executor over
// that loop), with database connections opened on the same loop, so the
// statement's round trip resumes on the thread that reads the socket rather
// than crossing to Swift concurrency's pool and back. The pool's
// connections are replaced by CANOPY_FLOOR_LOOP_CONNECTIONS (default 4) per
// loop, used in turn (PostgresNIO queues a connection's statements).
//
// CANOPY_FLOOR_ON_LOOP=2 (issue 69, step 1 of docs/plans/
// ISSUE_69_SERVE_ON_LOOP.md): the gateway's design tried on the floor.
// - The whole connection is pinned, not only the handler: a server child
//   channel runs Hummingbird's connection task under a task executor over
//   the socket's loop, so reading the body and writing the answer stay on
//   that loop too.
// - Each loop has its own `PostgresClient` (a pool: keep-alive, lease
//   queue) made with that loop as its event loop group, of
//   CANOPY_FLOOR_LOOP_POOL connections (default: the pool mode's
//   max(4, 2 × cores) shared over the loops, 2 × 2 on 2 cores: an equal
//   budget; both totals are printed at start).
// - A busy loop sheds: a request stays on its socket's loop while fewer
//   than CANOPY_FLOOR_LOOP_DEPTH × connections (default 2 × 2) requests are
//   in flight there; otherwise it moves to the least busy other loop under
//   that bound (its executor and its pool), else it waits on its own.
//   CANOPY_FLOOR_LOOP_MOVE=0 keeps every request on its socket's loop. The
//   body is read on the socket's loop; only the statement moves.
//   `GET /placements` answers how many stayed, moved and waited.
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 6, let port = Int(arguments[1]), let pgPort = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: canopy-floor PORT SOCKET_DIR PG_PORT STATEMENT_FILE KEY [PARAMETER ...]\n".utf8))
    exit(2)
}
let key = arguments[5]

/// The captured statement, prepared once per connection and then only
/// bound, as the gateway runs its statements (StatementShapes).
struct CapturedStatement: PostgresPreparedStatement {
    static let sql = (try? String(contentsOfFile: CommandLine.arguments[4], encoding: .utf8)) ?? "SELECT NULL::text"
    static let parameters: [String?] = CommandLine.arguments.dropFirst(6).map { $0 == "NULL" ? nil : $0 }
    typealias Row = String?

    func makeBindings() throws -> PostgresBindings {
        var binds = PostgresBindings()
        for parameter in Self.parameters { binds.append(parameter) }
        return binds
    }

    /// The answer's JSON is the first text column (the gateway's reads put
    /// a zone-found flag before it, and paging columns after it).
    func decodeRow(_ row: PostgresRow) throws -> String? {
        guard let cell = row.first(where: { [.text, .json, .jsonb].contains($0.dataType) }) else { return nil }
        return try cell.decode(String?.self)
    }
}
let prefix = ByteBuffer(string: "{\"data\":{\"\(key)\":")
let suffix = ByteBuffer(string: "}}")

var logger = Logger(label: "canopy-floor")
logger.logLevel = .warning
var configuration = PostgresClient.Configuration(
    unixSocketPath: "\(arguments[2])/.s.PGSQL.\(pgPort)", username: "canopy_gateway", password: nil, database: "canopy"
)
// As many connections as `canopy serve`'s requests get by default
// (--database-connections, less the one its change listener holds).
let poolConnections = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
configuration.options.maximumConnections = poolConnections
let client = PostgresClient(configuration: configuration, backgroundLogger: logger)

if ProcessInfo.processInfo.environment["CANOPY_FLOOR_ON_LOOP"] == "1" {
    let group = MultiThreadedEventLoopGroup.singleton
    let perLoop = Int(ProcessInfo.processInfo.environment["CANOPY_FLOOR_LOOP_CONNECTIONS"] ?? "") ?? 4
    var loops: [ObjectIdentifier: LoopConnections] = [:]
    var connectionID = 0
    for loop in group.makeIterator() {
        var connections: [PostgresConnection] = []
        for _ in 0..<perLoop {
            connectionID += 1
            connections.append(try await PostgresConnection.connect(
                on: loop, configuration: .init(unixSocketPath: "\(arguments[2])/.s.PGSQL.\(pgPort)", username: "canopy_gateway", password: nil, database: "canopy"),
                id: connectionID, logger: logger))
        }
        loops[ObjectIdentifier(loop)] = LoopConnections(loop: loop, connections: connections)
    }
    let byLoop = loops
    let router = Router(context: LoopRequestContext.self)
    router.post("**") { request, context -> Response in
        guard let own = byLoop[ObjectIdentifier(context.eventLoop)] else { throw HTTPError(.internalServerError) }
        return try await withTaskExecutorPreference(own.executor) {
            _ = try await request.body.collect(upTo: 1 << 20)
            var body = prefix
            for try await json in try await own.next().execute(CapturedStatement(), logger: logger) {
                body.writeString(json ?? "null")
            }
            body.writeImmutableBuffer(suffix)
            return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: body))
        }
    }
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
    try await app.runService()
} else if ProcessInfo.processInfo.environment["CANOPY_FLOOR_ON_LOOP"] == "2" {
    let environment = ProcessInfo.processInfo.environment
    let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
    let perLoop = Int(environment["CANOPY_FLOOR_LOOP_POOL"] ?? "") ?? max(1, poolConnections / loops.count)
    let depth = Int(environment["CANOPY_FLOOR_LOOP_DEPTH"] ?? "") ?? 2
    var loopConfiguration = configuration
    loopConfiguration.options.maximumConnections = perLoop
    let slots = loops.map { loop in
        LoopSlot(loop: loop, client: PostgresClient(configuration: loopConfiguration, eventLoopGroup: loop, backgroundLogger: logger))
    }
    FileHandle.standardError.write(Data("canopy-floor on loops: \(loops.count) loops × \(perLoop) connections (the pool mode's \(poolConnections)), depth \(depth)\n".utf8))
    let placement = Placement(slots: slots, limit: perLoop * depth, moves: environment["CANOPY_FLOOR_LOOP_MOVE"] != "0")
    let router = Router(context: LoopRequestContext.self)
    router.get("placements") { _, _ -> Response in
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: placement.counts)))
    }
    router.post("**") { request, context -> Response in
        _ = try await request.body.collect(upTo: 1 << 20)
        guard let (slot, moved) = placement.take(arrivingOn: context.eventLoop) else { throw HTTPError(.internalServerError) }
        defer { slot.inFlight.subtract(1, ordering: .relaxed) }
        @Sendable func answer() async throws -> Response {
            var body = prefix
            for try await json in try await slot.client.execute(CapturedStatement(), logger: logger) {
                body.writeString(json ?? "null")
            }
            body.writeImmutableBuffer(suffix)
            return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: body))
        }
        // The connection task already runs on the socket's loop.
        guard moved else { return try await answer() }
        return try await withTaskExecutorPreference(slot.executor) { try await answer() }
    }
    let server = HTTPServerBuilder { responder in LoopPinnedChannel(base: HTTP1Channel(responder: responder), placement: placement) }
    let app = Application(
        router: router, server: server, configuration: .init(address: .hostname("127.0.0.1", port: port)),
        services: slots.map(\.client), logger: logger
    )
    try await app.runService()
    FileHandle.standardError.write(Data("placements: \(placement.counts)\n".utf8))
} else {
    let router = Router()
    router.post("**") { request, _ -> Response in
        _ = try await request.body.collect(upTo: 1 << 20)
        var body = prefix
        for try await json in try await client.execute(CapturedStatement(), logger: logger) {
            body.writeString(json ?? "null")
        }
        body.writeImmutableBuffer(suffix)
        return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: body))
    }
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), services: [client], logger: logger)
    try await app.runService()
}

/// A request context that knows the event loop its socket belongs to.
struct LoopRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let eventLoop: any EventLoop

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.eventLoop = source.channel.eventLoop
    }
}

/// Runs a task's jobs on one event loop: Swift concurrency's work for a
/// request stays on the thread that owns its socket and its connections.
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    let loop: any EventLoop
    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// One loop's database connections, handed out in turn; touched only on
/// that loop.
final class LoopConnections: @unchecked Sendable {
    let executor: EventLoopTaskExecutor
    let connections: [PostgresConnection]
    var turn = 0

    init(loop: any EventLoop, connections: [PostgresConnection]) {
        self.executor = EventLoopTaskExecutor(loop)
        self.connections = connections
    }

    func next() -> PostgresConnection {
        executor.loop.preconditionInEventLoop()
        turn = (turn + 1) % connections.count
        return connections[turn]
    }
}

/// Mode 2: one event loop, its executor, its own pool, and the requests in
/// flight on it.
final class LoopSlot: Sendable {
    let executor: EventLoopTaskExecutor
    let client: PostgresClient
    let inFlight = Atomic<Int>(0)

    init(loop: any EventLoop, client: PostgresClient) {
        self.executor = EventLoopTaskExecutor(loop)
        self.client = client
    }
}

/// Mode 2: where a request runs (the rules in this file's header), and how
/// often each rule was taken.
final class Placement: Sendable {
    let slots: [LoopSlot]
    let limit: Int
    let moves: Bool
    private let stayed = Atomic<Int>(0)
    private let moved = Atomic<Int>(0)
    private let waited = Atomic<Int>(0)

    init(slots: [LoopSlot], limit: Int, moves: Bool) {
        self.slots = slots
        self.limit = limit
        self.moves = moves
    }

    /// The slot of the loop that owns a socket.
    func slot(of loop: any EventLoop) -> LoopSlot? {
        slots.first { ObjectIdentifier($0.executor.loop) == ObjectIdentifier(loop) }
    }

    /// The slot a request arriving on `loop` runs on, and whether it left
    /// its socket's loop; counted in flight there (the caller subtracts it
    /// when done). The check and the count are two steps: two requests at
    /// once may both pass the limit by one, which only blurs the bound.
    func take(arrivingOn loop: any EventLoop) -> (LoopSlot, moved: Bool)? {
        guard let own = slot(of: loop) else { return nil }
        var chosen = own
        if own.inFlight.load(ordering: .relaxed) < limit || !moves {
            stayed.add(1, ordering: .relaxed)
        } else if let other = slots.filter({ $0 !== own }).min(by: { $0.inFlight.load(ordering: .relaxed) < $1.inFlight.load(ordering: .relaxed) }),
                  other.inFlight.load(ordering: .relaxed) < limit {
            moved.add(1, ordering: .relaxed)
            chosen = other
        } else {
            waited.add(1, ordering: .relaxed)
        }
        chosen.inFlight.add(1, ordering: .relaxed)
        return (chosen, chosen !== own)
    }

    var counts: String {
        "{\"stayed\":\(stayed.load(ordering: .relaxed)),\"moved\":\(moved.load(ordering: .relaxed)),\"waited\":\(waited.load(ordering: .relaxed))}"
    }
}

/// Mode 2: Hummingbird's connection task for a socket runs on the socket's
/// loop (reading requests, running the responder, writing answers).
struct LoopPinnedChannel<Base: ServerChildChannel>: ServerChildChannel {
    let base: Base
    let placement: Placement

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Base.Value> {
        base.setup(channel: channel, logger: logger)
    }

    func handle(value: Base.Value, logger: Logger) async {
        guard let slot = placement.slot(of: value.channel.eventLoop) else {
            await base.handle(value: value, logger: logger)
            return
        }
        await withTaskExecutorPreference(slot.executor) {
            await base.handle(value: value, logger: logger)
        }
    }
}
