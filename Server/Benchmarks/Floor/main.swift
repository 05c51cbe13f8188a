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
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

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
configuration.options.maximumConnections = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
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
