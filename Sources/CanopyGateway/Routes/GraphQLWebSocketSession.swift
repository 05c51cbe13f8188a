import CanopyEncoding
import CanopyIdentity
import CanopyPlanner
import CanopyRequestStore
import CanopyWAL
import Foundation
import HummingbirdWebSocket
import Logging
import Synchronization

/// One WebSocket speaking `graphql-transport-ws`: authenticates once
/// (`connection_init`) and checks that credential again every second (a
/// revoked Canopy token or an expired JWT closes the socket with 4403
/// within the token cache's 4 s and that second), then runs each
/// `subscribe` as a task that follows
/// its change feed as the subscriber's user and sends a `next` for every
/// page with changes. Commits wake the tasks through the gateway's one
/// `LISTEN` connection ([ChangeNotifier]); the pages themselves are read
/// under the subscriber's identity, so row-level security decides what a
/// subscriber can learn, exactly as for `zoneChanges` over HTTP.
final class GraphQLWebSocketSession: Sendable {
    /// How long a client has to send `connection_init`.
    static let initialisationTimeout: Duration = .seconds(10)
    /// Subscriptions one socket may hold at once.
    static let maximumSubscriptions = 64
    /// How often the socket's credential is checked again.
    static let credentialCheckInterval: Duration = .seconds(1)

    private struct Running {
        var generation: Int
        var task: Task<Void, Never>
    }

    private struct State {
        var initialised = false
        var userID: Int64?
        var subscriptions: [String: Running] = [:]
        var generations = 0
        var closed = false
    }

    /// The zone a `zoneChanged` subscription follows, known after its first page.
    private final class FollowedZone: Sendable {
        let id = Mutex<Int64?>(nil)
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
    let outbound: WebSocketOutboundWriter
    let headerToken: String?
    let headerNonce: String?
    let requestID: String
    let logger: Logger
    private let state = Mutex(State())
    private let credentialWatch = Mutex<Task<Void, Never>?>(nil)

    init(
        database: RequestDatabase, configuration: GatewayConfiguration, authenticator: Authenticator,
        outbound: WebSocketOutboundWriter, headerToken: String?, headerNonce: String?, requestID: String, logger: Logger
    ) {
        self.database = database
        self.configuration = configuration
        self.authenticator = authenticator
        self.outbound = outbound
        self.headerToken = headerToken
        self.headerNonce = headerNonce
        self.requestID = requestID
        self.logger = logger
    }

    func run(_ inbound: WebSocketInboundStream) async {
        let timeout = Task { [self] in
            try? await Task.sleep(for: Self.initialisationTimeout)
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
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            defer { state.subscriptions = [:] }
            return state.subscriptions.values.map(\.task)
        }
        for task in tasks { task.cancel() }
    }

    /// Handles one client message; false once the connection is closed.
    private func handle(_ text: String) async -> Bool {
        guard let message = ClientMessage(text) else {
            await close(4400, "invalid message: expected JSON with a type")
            return false
        }
        switch message.type {
        case "connection_init":
            let first = state.withLock { state -> Bool in
                defer { state.initialised = true }
                return !state.initialised
            }
            guard first else {
                await close(4429, "Too many initialisation requests")
                return false
            }
            let (token, nonce) = credential(message.payload)
            let caller: Authenticator.Caller
            do {
                guard let token else { throw APIError(.notAuthenticated, "send a bearer token in the Authorization header or in connection_init's payload") }
                caller = try await authenticator.caller(token: token, nonce: nonce, logger: logger)
            } catch {
                let apiError = APIError(error, requestID: requestID, logger: logger)
                await close(4403, "Forbidden: \(apiError.message)")
                return false
            }
            state.withLock { $0.userID = caller.userID }
            if let token { watchCredential(token: token, nonce: nonce, caller: caller) }
            return await send("{\"type\":\"connection_ack\"}")
        case "ping":
            return await send("{\"type\":\"pong\"}")
        case "pong":
            return true
        case "subscribe":
            guard let userID = state.withLock({ $0.userID }) else {
                await close(4401, "Unauthorized")
                return false
            }
            guard let id = message.id, !id.isEmpty, let request = Self.graphQLRequest(message.payload) else {
                await close(4400, "invalid subscribe message: it needs an id and a payload with a query")
                return false
            }
            let limits = authenticator.limits
            if let wait = limits.takeRequest(for: userID) {
                return await sendError(id, limits.rateError(retryingIn: wait))
            }
            enum Start { case started, duplicate, tooMany, tooManyForUser }
            let start = state.withLock { state -> Start in
                guard state.subscriptions[id] == nil else { return .duplicate }
                guard state.subscriptions.count < Self.maximumSubscriptions else { return .tooMany }
                guard limits.openSubscription(for: userID) else { return .tooManyForUser }
                state.generations += 1
                let generation = state.generations
                state.subscriptions[id] = Running(generation: generation, task: Task { [self] in
                    defer { limits.closeSubscription(for: userID) }
                    await follow(id: id, generation: generation, request: request, userID: userID)
                })
                return .started
            }
            switch start {
            case .started:
                return true
            case .duplicate:
                await close(4409, "Subscriber for \(id) already exists")
                return false
            case .tooMany:
                return await sendError(id, APIError(.limitExceeded, "a socket holds at most \(Self.maximumSubscriptions) subscriptions; complete one first"))
            case .tooManyForUser:
                return await sendError(id, APIError(
                    .limitExceeded, "a user holds at most \(limits.limits.maximumSubscriptionsPerUser) subscriptions on this server; complete one first"))
            }
        case "complete":
            if let id = message.id {
                state.withLock { $0.subscriptions.removeValue(forKey: id) }?.task.cancel()
            }
            return true
        default:
            await close(4400, "unknown message type \(message.type)")
            return false
        }
    }

    /// The token and nonce: the upgrade's headers, or `connection_init`'s
    /// payload (for browsers, which cannot set headers on a WebSocket).
    private func credential(_ payload: JSONValue?) -> (token: String?, nonce: String?) {
        var header = headerToken
        var nonce = headerNonce
        if case .object(let fields)? = payload {
            for key in ["Authorization", "authorization", "authToken", "token"] {
                if case .string(let value)? = fields[key] { header = value }
            }
            if case .string(let value)? = fields["nonce"] { nonce = value }
        }
        return (header.flatMap { BearerTokenReader.token(in: $0, schemeOptional: true) }, nonce)
    }

    /// Every second: a JWT past its `exp` (with the verifier's leeway), or a
    /// Canopy token that no longer authenticates as the same user, closes
    /// the socket. A database that does not answer is not a refusal.
    private func watchCredential(token: String, nonce: String?, caller: Authenticator.Caller) {
        let task = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.credentialCheckInterval)
                if Task.isCancelled { return }
                if let expires = caller.expires {
                    if Date().timeIntervalSince(expires) > TokenVerifier.leeway {
                        await close(4403, "Forbidden: the token expired; connect again with a fresh one")
                        return
                    }
                    continue
                }
                do {
                    let now = try await authenticator.caller(token: token, nonce: nonce, logger: logger)
                    if now.userID != caller.userID { throw APIError(.notAuthenticated, "the token now belongs to another user") }
                } catch {
                    let apiError = APIError(error, requestID: requestID, logger: logger)
                    guard apiError.code == .notAuthenticated else { continue }
                    logger.info("closing a websocket whose token no longer authenticates", metadata: ["canopy.reason": "\(apiError.message)"])
                    await close(4403, "Forbidden: \(apiError.message)")
                    return
                }
            }
        }
        credentialWatch.withLock { $0 = task }
    }

    private static func graphQLRequest(_ payload: JSONValue?) -> GraphQLHTTPRequest? {
        payload.flatMap { try? GraphQLHTTPRequest(body: $0) }
    }

    /// Runs one subscription until the client completes it, the connection
    /// ends or the feed fails (an `error` message, after which it is over).
    private func follow(id: String, generation: Int, request: GraphQLHTTPRequest, userID: Int64) async {
        var fieldKey: String?
        do {
            var parsed = try ParsedRequest(
                query: request.query, variables: request.variables ?? [:], operationName: request.operationName,
                limits: .init(maximumDepth: configuration.maximumDepth, maximumAliases: configuration.maximumAliases)
            )
            parsed.publicURL = configuration.publicURL
            guard parsed.operation.operation == .subscription else {
                throw APIError(.badRequest, "over WebSocket Canopy serves subscriptions; send queries and mutations with POST /graphql")
            }
            let fields = try parsed.rootFields()
            try QueryCost.check(fields, in: parsed, maximum: configuration.limits.maximumQueryCost)
            guard let field = fields.first, ["zoneChanged", "databaseChanged"].contains(field.name) else {
                throw APIError(.badRequest, "subscribe to zoneChanged or databaseChanged")
            }
            fieldKey = field.responseKey
            let scope = try parsed.arguments(of: field).string("scope")
            let executor = OperationExecutor(
                database: database, configuration: configuration, request: parsed,
                userID: userID, requestID: requestID, logger: logger
            )
            // Which commits may concern this feed: its zone; the owner's zones
            // (PRIVATE); other owners' zones (SHARED: row-level security then
            // decides whether anything is the subscriber's business).
            let followed = FollowedZone()
            let isZoneFeed = field.name == "zoneChanged"
            let wants: @Sendable (ChangeNotifier.Event) -> Bool = { event in
                guard case .zone(let zone, let owner) = event else { return event == .resync }
                if isZoneFeed { return followed.id.withLock { $0 == nil || $0 == zone } }
                return scope == "PRIVATE" ? owner == userID : owner != userID
            }
            // Subscribe before the first read, so no commit falls between them.
            let (subscriber, events) = database.notifier.subscribe(wants: wants)
            defer { database.notifier.unsubscribe(subscriber) }
            var wakeUps = events.makeAsyncIterator()
            var since: String?? = .none
            // After a wake-up, what the commit's page must show: with
            // replicas, the primary's position once woken (ReplicaSet).
            var woken: WALPosition?
            while !Task.isCancelled {
                var page: OperationExecutor.FeedPage
                repeat {
                    page = field.name == "zoneChanged"
                        ? try await executor.zoneChanges(field, overridingSince: since, after: woken)
                        : try await executor.databaseChanges(field, overridingSince: since, after: woken)
                    if let zone = page.zoneID { followed.id.withLock { $0 = zone } }
                    if !page.isEmpty {
                        // Not after a `complete` (the id may already be reused).
                        guard isCurrent(id, generation) else { return }
                        let data = "{\"data\":{\(GraphQLResponse.quoted(field.responseKey)):\(page.json)}}"
                        guard await send("{\"id\":\(GraphQLResponse.quoted(id)),\"type\":\"next\",\"payload\":\(data)}") else { return }
                    }
                    since = .some(page.token)
                } while page.moreComing && !Task.isCancelled
                // Wait for a commit that may concern this feed.
                guard await wakeUps.next() != nil else { return }   // the server is shutting down
                woken = await database.replicas?.primaryPosition(logger: logger)
            }
        } catch {
            if Task.isCancelled { return }
            var apiError = APIError(error, requestID: requestID, logger: logger)
            if apiError.path.isEmpty, let fieldKey { apiError.path = [fieldKey] }
            // The id is free again before the client hears of the error.
            let current = state.withLock { state -> Bool in
                guard state.subscriptions[id]?.generation == generation else { return false }
                state.subscriptions.removeValue(forKey: id)
                return true
            }
            if current {
                _ = await sendError(id, apiError)
            }
        }
    }

    /// Whether subscription `id` is still the one started as `generation`.
    private func isCurrent(_ id: String, _ generation: Int) -> Bool {
        state.withLock { $0.subscriptions[id]?.generation == generation }
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
