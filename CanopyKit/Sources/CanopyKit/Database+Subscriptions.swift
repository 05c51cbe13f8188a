import Foundation

/// Live change notifications over the gateway's WebSocket
/// (`graphql-transport-ws`, docs/CHANGE_FEEDS.md). Each element is one page
/// of the feed, exactly what the HTTP call would answer from the previous
/// token; its token continues the feed over HTTP too. CloudKit pushes
/// "something changed"; Canopy sends the changes themselves while the
/// socket is open. The stream ends when the consumer stops iterating (the
/// subscription is completed and the socket closed) or throws when the
/// server refuses it or the socket fails.
extension Database {
    /// A zone's changes from `token` (nil: the whole zone first), as they commit.
    public func recordZoneChangeNotifications(inZoneWith zoneID: RecordZone.ID, since token: ServerChangeToken? = nil)
        -> AsyncThrowingStream<(modifications: [Record], deletions: [RecordDeletion], changeToken: ServerChangeToken, moreComing: Bool), any Error> {
        let database = self
        return subscribe(Documents.zoneChanged, field: "zoneChanged", variables: [
            "scope": scopeJSON, "zone": zoneID.json, "since": token.map { .string($0.value) } ?? .null, "keys": .null,
        ]) { page in try await database.recordZoneChanges(from: page, zoneID: zoneID) }
    }

    /// The database's zone changes from `token`, as they commit.
    public func databaseChangeNotifications(since token: ServerChangeToken? = nil)
        -> AsyncThrowingStream<(modifications: [RecordZone.ID], deletions: [RecordZone.ID], changeToken: ServerChangeToken, moreComing: Bool), any Error> {
        let database = self
        return subscribe(Documents.databaseChanged, field: "databaseChanged", variables: [
            "scope": scopeJSON, "since": token.map { .string($0.value) } ?? .null,
        ]) { page in try database.databaseChanges(from: page) }
    }

    private func subscribe<Element: Sendable>(_ document: String, field: String, variables: [String: JSON],
                                              decode: @escaping @Sendable (JSON?) async throws -> Element)
        -> AsyncThrowingStream<Element, any Error> {
        let transport = self.transport
        let (stream, continuation) = AsyncThrowingStream<Element, any Error>.makeStream()
        let task = Task {
            var socket: (any WebSocketConnection)?
            do {
                guard let token = try await transport.tokens.current() else {
                    throw CanopyError(.notAuthenticated, "subscriptions need a signed-in container (a token provider)")
                }
                var components = URLComponents(url: transport.endpoint, resolvingAgainstBaseURL: false)!
                components.scheme = components.scheme == "https" ? "wss" : "ws"
                let connection = try await WebSockets.connect(components.url!, headers: [
                    "Sec-WebSocket-Protocol": "graphql-transport-ws", "Authorization": "Bearer \(token)",
                ])
                socket = connection
                try await connection.send(JSON.object(["type": .string("connection_init"),
                                                       "payload": .object(["Authorization": .string("Bearer \(token)")])]).text)
                guard let ack = try await connection.receive() else {
                    throw CanopyError(.notAuthenticated, "the server closed the subscription socket (refused token?)")
                }
                guard try JSON(parsing: Data(ack.utf8))["type"]?.string == "connection_ack" else {
                    throw CanopyError(.serverResponseLost, "expected connection_ack, got \(ack.prefix(200))")
                }
                try await connection.send(JSON.object([
                    "id": .string("1"), "type": .string("subscribe"),
                    "payload": .object(["query": .string(document), "variables": .object(variables)]),
                ]).text)
                while !Task.isCancelled, let text = try await connection.receive() {
                    let message = try JSON(parsing: Data(text.utf8))
                    switch message["type"]?.string {
                    case "next":
                        if let error = message["payload"]?["errors"]?.array?.first {
                            throw GraphQLTransport.error(error, retryAfter: nil, status: 200)
                        }
                        continuation.yield(try await decode(message["payload"]?["data"]?[field]))
                    case "error":
                        let error = message["payload"]?.array?.first ?? .null
                        throw GraphQLTransport.error(error, retryAfter: nil, status: 200)
                    case "complete":
                        continuation.finish()
                        await connection.close()
                        return
                    case "ping":
                        try await connection.send(#"{"type":"pong"}"#)
                    default:
                        break
                    }
                }
                if !Task.isCancelled {
                    throw CanopyError(.networkFailure, "the server closed the subscription socket")
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
            if let socket {
                try? await socket.send(#"{"id":"1","type":"complete"}"#)
                await socket.close()
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
