import CanopyAssets
import CanopyPlanner
import CanopyRequestStore
import Logging
import PostgresNIO

/// How a Web Services request reaches the database as its caller: a
/// plan's statement, read or written (``read(_:from:_:)``,
/// ``write(_:_:)``), the way most endpoints run since issue 49
/// (DECISIONS 112); and, for the shares still, a
/// constant GraphQL document run through the same check and
/// ``OperationExecutor`` as `POST /graphql` (``run(_:_:)``).
struct GraphQLBridge {
    let database: RequestDatabase
    let configuration: GatewayConfiguration
    let recordSchemas: RecordSchemas
    let userID: Int64?
    let requestID: String
    let logger: Logger
    /// Signs asset download URLs into answers that hold assets (nil: no asset store).
    let assetURLs: (@Sendable (Logger) async throws -> AssetURLSigner)?

    /// Runs a planner's statement as the caller, in one round trip on the
    /// pool: the typed path, with no GraphQL document in between.
    func read<T: Sendable>(
        _ statement: SQLStatement, from source: RequestDatabase.ReadSource = .primary,
        _ collect: @escaping @Sendable ([PostgresRow]) throws -> T
    ) async throws -> T {
        try await database.read(statement, as: userID, from: source, logger: logger, collect)
    }

    /// Runs a planner's writing statement as the caller, in a transaction.
    func write<T: Sendable>(_ statement: SQLStatement, _ collect: @escaping @Sendable ([PostgresRow]) throws -> T) async throws -> T {
        guard let userID else { throw APIError(.notAuthenticated, "sign in first: only the public database's reads are open without a token") }
        let logger = self.logger
        return try await database.withUser(userID, device: nil, logger: logger) { connection in
            try collect(try await connection.execute(statement, logger: logger))
        }
    }

    /// The key records cursors (`continuationMarker`s) are signed with.
    func cursorKey() async throws -> SigningKey {
        let keys = try await database.secrets.keys("cursor", logger: logger)
        return SigningKey(keys.current, accepted: keys.accepted)
    }

    /// The key change tokens are sealed with.
    func changeTokenKey() async throws -> SigningKey {
        let keys = try await database.secrets.keys("change-token", logger: logger)
        return SigningKey(keys.current, accepted: keys.accepted, retired: keys.retired)
    }

    /// The one root field of `document`, run with `variables`: its JSON, parsed.
    func run(_ document: String, _ variables: [String: JSONValue]) async throws -> JSONValue {
        guard let text = try await runText(document, variables) else { return .null }
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw APIError(.internalError, "internal error; quote request id \(requestID) when reporting it")
        }
    }

    /// The one root field's JSON text, as the executor answered it (nil: null).
    func runText(_ document: String, _ variables: [String: JSONValue]) async throws -> String? {
        let check = GraphQLRequestCheck(
            configuration: configuration,
            maximumCost: userID == nil ? configuration.limits.anonymousMaximumQueryCost : configuration.limits.maximumQueryCost
        )
        let parsed = try check.parse(GraphQLHTTPRequest(query: document, variables: variables, operationName: nil))
        let fields = try check.rootFields(of: parsed)
        guard fields.count == 1, let field = fields.first else {
            throw APIError(.internalError, "a Web Services document has one root field")
        }
        // Without a web token, what nobody may ask over GraphQL, nobody may ask here.
        if userID == nil && !AnonymousAccess.allows(field, in: parsed) {
            throw AnonymousAccess.refusal(of: field)
        }
        let executor = OperationExecutor(
            database: database, configuration: configuration, recordSchemas: recordSchemas, request: parsed,
            userID: userID, requestID: requestID, logger: logger
        )
        guard var text = try await executor.resolve(field) else { return nil }
        if let assetURLs, AssetURLSigner.mayHoldAssets(text) {
            text = try await assetURLs(logger).addingDownloadURLs(to: text)
        }
        return text
    }
}
