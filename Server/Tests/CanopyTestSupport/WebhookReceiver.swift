import CanopyAdmin
import CanopyRequestStore
import Foundation
import Hummingbird

/// What a push test's receiver got: one entry a request.
public struct ReceivedPush: Sendable {
    public var path: String
    public var headers: [String: String]
    public var body: String
    public var status: Int
    /// What the receiver found wrong with it (empty: nothing).
    public var problems: [String] = []

    public init(path: String, headers: [String: String], body: String, status: Int, problems: [String] = []) {
        self.path = path
        self.headers = headers
        self.body = body
        self.status = status
        self.problems = problems
    }
}

/// The requests a receiver got, and what it is told to answer.
public actor PushLog {
    public private(set) var received: [ReceivedPush] = []
    /// Answer this status to the next requests instead of success, this many times.
    var failing: (status: Int, times: Int) = (0, 0)

    public init() {}

    public func fail(with status: Int, times: Int) { failing = (status, times) }

    /// The status to answer now (consuming one failure).
    public func answer(success: Int) -> Int {
        guard failing.times > 0 else { return success }
        failing.times -= 1
        return failing.status
    }

    public func record(_ push: ReceivedPush) { received.append(push) }

    public func count(path: String? = nil) -> Int { received.filter { path == nil || $0.path == path }.count }
}

/// A webhook receiver: a Hummingbird server on loopback that records every
/// POST to `/hook/<name>` and answers 204 (or what ``PushLog/fail(with:times:)`` says).
public final class WebhookReceiver: Sendable {
    public let port: Int
    /// The loopback address it listens on (127.0.0.1 unless told).
    public let host: String
    public let log = PushLog()
    private let task: Task<Void, any Error>

    public init(host: String = "127.0.0.1") async throws {
        let port = try EmbeddedCluster.freePort()
        self.port = port
        self.host = host
        let router = Router()
        let log = self.log
        router.post("hook/:name") { request, context -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let status = await log.answer(success: 204)
            await log.record(ReceivedPush(path: request.uri.path, headers: headers, body: String(buffer: body), status: status))
            return Response(status: .init(code: status))
        }
        let (ready, running) = AsyncStream<Void>.makeStream()
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port)), onServerRunning: { _ in running.yield() })
        task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = ready.makeAsyncIterator()
        _ = await iterator.next()
    }

    public func url(_ name: String) -> String { "http://\(host):\(port)/hook/\(name)" }

    deinit { task.cancel() }
}

