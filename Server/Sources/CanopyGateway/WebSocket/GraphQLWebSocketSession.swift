import CanopyPlanner
import CanopyRequestStore
import HummingbirdWebSocket
import Logging
import Synchronization

/// One WebSocket speaking `graphql-transport-ws`: the protocol's state
/// machine. It authenticates once (`connection_init`), keeps the credential
/// watched (``WebSocketCredential``: a revoked Canopy token or an expired
/// JWT closes the socket with 4403 within the token cache's 4 s and that
/// second), and runs each `subscribe` as a ``SubscriptionFeed`` in the
/// socket's ``SubscriptionRegistry``.
final class GraphQLWebSocketSession: Sendable {
    private struct State {
        var initialised = false
        var userID: Int64?
        var closed = false
    }

    private struct ClientMessage {
        var type: String
        var id: String?
        var payload: JSONValue?

        /// A message's JSON text, or nil when it is not an object with a string `type`.
        init?(_ text: String) {
            guard case .object(let members)? = try? JSONValue(parsing: text), case .string(let type)? = members["type"] else { return nil }
            self.type = type
            id = members["id"]?.stringValue
            payload = members["payload"]
        }
    }

    let database: RequestDatabase
    let configuration: GatewayConfiguration
    let authenticator: Authenticator
    let recordSchemas: RecordSchemas
    let outbound: WebSocketOutboundWriter
    let headerToken: String?
    let headerNonce: String?
    let requestID: String
    let logger: Logger
    private let state = Mutex(State())
    private let subscriptions = SubscriptionRegistry()
    private let credentialWatch = Mutex<Task<Void, Never>?>(nil)

    init(
        database: RequestDatabase, configuration: GatewayConfiguration, authenticator: Authenticator, recordSchemas: RecordSchemas,
        outbound: WebSocketOutboundWriter, headerToken: String?, headerNonce: String?, requestID: String, logger: Logger
    ) {
        self.database = database
        self.configuration = configuration
        self.authenticator = authenticator
        self.recordSchemas = recordSchemas
        self.outbound = outbound
        self.headerToken = headerToken
        self.headerNonce = headerNonce
        self.requestID = requestID
        self.logger = logger
    }

    func run(_ inbound: WebSocketInboundStream) async {
        let timeout = Task { [self] in
            try? await Task.sleep(for: configuration.limits.webSocketInitialisationTimeout)
            if !Task.isCancelled && !state.withLock({ $0.initialised }) {
                await close(4408, "Connection initialisation timeout")
            }
        }
        defer {
            timeout.cancel()
            credentialWatch.withLock { $0 }?.cancel()
        }
        do {
            for try await message in inbound.messages(maxSize: configuration.limits.maximumWebSocketFrame) {
                guard case .text(let text) = message else {
                    await close(4400, "graphql-transport-ws messages are JSON text")
                    break
                }
                guard await handle(text) else { break }
            }
        } catch {
            logger.debug("websocket ended", metadata: ["canopy.error": "\(error)"])
        }
        subscriptions.cancelAll()
    }

    /// Handles one client message; false once the connection is closed.
    private func handle(_ text: String) async -> Bool {
        guard let message = ClientMessage(text) else {
            await close(4400, "invalid message: expected JSON with a type")
            return false
        }
        switch message.type {
        case "connection_init":
            return await initialise(message.payload)
        case "ping":
            return await send("{\"type\":\"pong\"}")
        case "pong":
            return true
        case "subscribe":
            return await subscribe(message)
        case "complete":
            if let id = message.id { subscriptions.complete(id) }
            return true
        default:
            await close(4400, "unknown message type \(message.type)")
            return false
        }
    }

    /// `connection_init`: once only; authenticates and starts the credential watch.
    private func initialise(_ payload: JSONValue?) async -> Bool {
        let first = state.withLock { state -> Bool in
            defer { state.initialised = true }
            return !state.initialised
        }
        guard first else {
            await close(4429, "Too many initialisation requests")
            return false
        }
        let credential = WebSocketCredential(headerToken: headerToken, headerNonce: headerNonce, payload: payload)
        let caller: Authenticator.Caller
        do {
            guard let token = credential.token else {
                throw APIError(.notAuthenticated, "send a bearer token in the Authorization header or in connection_init's payload")
            }
            caller = try await authenticator.caller(token: token, nonce: credential.nonce, logger: logger)
        } catch {
            let apiError = APIError(error, requestID: requestID, logger: logger)
            await close(4403, "Forbidden: \(apiError.message)")
            return false
        }
        state.withLock { $0.userID = caller.userID }
        if let token = credential.token {
            let task = Task { [self] in
                if let reason = await WebSocketCredential.watch(
                    token: token, nonce: credential.nonce, caller: caller, authenticator: authenticator, requestID: requestID, logger: logger
                ) {
                    await close(4403, reason)
                }
            }
            credentialWatch.withLock { $0 = task }
        }
        return await send("{\"type\":\"connection_ack\"}")
    }

    /// `subscribe`: starts a feed under the socket's and the user's limits.
    private func subscribe(_ message: ClientMessage) async -> Bool {
        guard let userID = state.withLock({ $0.userID }) else {
            await close(4401, "Unauthorized")
            return false
        }
        guard let id = message.id, !id.isEmpty, let request = message.payload.flatMap({ try? GraphQLHTTPRequest(body: $0) }) else {
            await close(4400, "invalid subscribe message: it needs an id and a payload with a query")
            return false
        }
        let limits = authenticator.limits
        if let wait = limits.takeRequest(for: userID) {
            return await sendError(id, limits.rateError(retryingIn: wait))
        }
        let start = subscriptions.start(id, admitForUser: { limits.openSubscription(for: userID) }) { [self] generation in
            defer { limits.closeSubscription(for: userID) }
            await follow(id: id, generation: generation, request: request, userID: userID)
        }
        switch start {
        case .started:
            return true
        case .duplicate:
            await close(4409, "Subscriber for \(id) already exists")
            return false
        case .tooMany:
            return await sendError(id, APIError(.limitExceeded, "a socket holds at most \(SubscriptionRegistry.maximum) subscriptions; complete one first"))
        case .tooManyForUser:
            return await sendError(id, APIError(
                .limitExceeded, "a user holds at most \(limits.limits.maximumSubscriptionsPerUser) subscriptions on this server; complete one first"))
        }
    }

    /// Runs one subscription until the client completes it, the connection
    /// ends or the feed fails (an `error` message, after which it is over).
    private func follow(id: String, generation: Int, request: GraphQLHTTPRequest, userID: Int64) async {
        var feed = SubscriptionFeed(database: database, configuration: configuration, recordSchemas: recordSchemas, request: request, userID: userID,
                                    requestID: requestID, logger: logger)
        do {
            try await feed.run { [self] payload in
                // Not after a `complete` (the id may already be reused).
                guard subscriptions.isCurrent(id, generation) else { return false }
                return await send("{\"id\":\(GraphQLResponse.quoted(id)),\"type\":\"next\",\"payload\":\(payload)}")
            }
        } catch {
            if Task.isCancelled { return }
            var apiError = APIError(error, requestID: requestID, logger: logger)
            if apiError.path.isEmpty, let fieldKey = feed.fieldKey { apiError.path = [fieldKey] }
            // The id is free again before the client hears of the error.
            if subscriptions.finish(id, generation) {
                _ = await sendError(id, apiError)
            }
        }
    }

    /// Sends the `error` message that ends subscription `id`.
    private func sendError(_ id: String, _ error: APIError) async -> Bool {
        let errors = GraphQLResponse.encode([error], requestID: requestID)
        return await send("{\"id\":\(GraphQLResponse.quoted(id)),\"type\":\"error\",\"payload\":\(errors)}")
    }

    /// Sends a text frame; false when the connection is gone.
    private func send(_ text: String) async -> Bool {
        do {
            try await outbound.write(.text(text))
            return true
        } catch {
            return false
        }
    }

    /// A close frame's reason holds at most 123 bytes of UTF-8: whole
    /// characters, with "…" when cut.
    static func closeReason(_ reason: String) -> String {
        guard reason.utf8.count > 123 else { return reason }
        var kept = ""
        for character in reason {
            guard kept.utf8.count + character.utf8.count <= 120 else { break }
            kept.append(character)
        }
        return kept + "…"
    }

    private func close(_ code: UInt16, _ reason: String) async {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        try? await outbound.close(.unknown(code), reason: Self.closeReason(reason))
    }
}
