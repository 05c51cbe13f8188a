import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import HummingbirdWSTesting
import Testing

/// What a WebSocket test has received, read with a timeout.
actor Inbox {
    struct Timeout: Error {}
    private var queue: [String] = []
    private var closed = false

    func push(_ text: String) {
        queue.append(text)
    }

    func close() { closed = true }

    /// The next message as a JSON object, or nil once the socket closed.
    /// The default wait is a minute: a functional test waits for a
    /// condition, however loaded the machine; how fast a message comes is
    /// asserted only by the latency tier (docs/TESTING.md).
    nonisolated func next(within timeout: Duration = .seconds(60)) async throws -> [String: Any]? {
        guard let text = try await nextText(within: timeout) else { return nil }
        return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
    }

    func nextText(within timeout: Duration) async throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if !queue.isEmpty { return queue.removeFirst() }
            if closed { return nil }
            if ContinuousClock.now >= deadline { throw Timeout() }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// True when nothing arrives within `time`.
    func staysQuiet(for time: Duration) async throws -> Bool {
        try await Task.sleep(for: time)
        return queue.isEmpty
    }
}

extension TestClientProtocol {
    /// Opens `/graphql` as a graphql-transport-ws socket (token in the
    /// upgrade's Authorization header when given), runs `body` with what
    /// arrives and a way to send, and returns the server's close code.
    @discardableResult
    func subscriptionSocket(
        token: String?, _ body: @escaping @Sendable (Inbox, @Sendable (String) async throws -> Void) async throws -> Void
    ) async throws -> UInt16? {
        var headers: HTTPFields = [.secWebSocketProtocol: "graphql-transport-ws"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        let frame = try await ws("/graphql", configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers)) { inbound, outbound, _ in
            let inbox = Inbox()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { await inbox.push(text) }
                    }
                    await inbox.close()
                }
                try await body(inbox) { text in try await outbound.write(.text(text)) }
                try await outbound.close(.normalClosure, reason: nil)
                try await group.waitForAll()
            }
        }
        guard let frame else { return nil }
        switch frame.closeCode {
        case .unknown(let code): return code
        case .normalClosure: return 1000
        default: return 0
        }
    }
}

/// JSON text for a `subscribe` message.
func subscribeMessage(id: String, _ query: String, variables: [String: Any] = [:]) throws -> String {
    let object: [String: Any] = ["id": id, "type": "subscribe", "payload": ["query": query, "variables": variables]]
    return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
}
