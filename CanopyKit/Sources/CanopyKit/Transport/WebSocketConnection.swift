import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A text WebSocket, as the subscriptions need it. Apple platforms use
/// URLSessionWebSocketTask; Linux uses SwiftNIO (NIOWebSocketConnection),
/// because Foundation there needs a libcurl with WebSocket support.
protocol WebSocketConnection: Sendable {
    func send(_ text: String) async throws
    /// The next text message; nil when the socket closed.
    func receive() async throws -> String?
    func close() async
}

enum WebSockets {
    /// Opens a socket to `url` (ws or wss) with these request headers.
    static func connect(_ url: URL, headers: [String: String]) async throws -> any WebSocketConnection {
        #if canImport(FoundationNetworking)
        return try await NIOWebSocketConnection.connect(url, headers: headers)
        #else
        return try await URLSessionWebSocketConnection.connect(url, headers: headers)
        #endif
    }
}

#if !canImport(FoundationNetworking)
/// URLSession's WebSocket client, on Apple platforms.
final class URLSessionWebSocketConnection: WebSocketConnection, @unchecked Sendable {
    private let task: URLSessionWebSocketTask

    private init(task: URLSessionWebSocketTask) {
        self.task = task
    }

    static func connect(_ url: URL, headers: [String: String]) async throws -> URLSessionWebSocketConnection {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let task = URLSession.shared.webSocketTask(with: request)
        task.resume()
        return URLSessionWebSocketConnection(task: task)
    }

    func send(_ text: String) async throws {
        do { try await task.send(.string(text)) } catch {
            throw CanopyError(.networkFailure, "the subscription socket failed: \(error.localizedDescription)")
        }
    }

    func receive() async throws -> String? {
        do {
            switch try await task.receive() {
            case .string(let text): return text
            case .data(let data): return String(decoding: data, as: UTF8.self)
            @unknown default: return nil
            }
        } catch {
            if task.closeCode != .invalid { return nil }
            throw CanopyError(.networkFailure, "the subscription socket failed: \(error.localizedDescription)")
        }
    }

    func close() async {
        task.cancel(with: .normalClosure, reason: nil)
    }
}
#endif
