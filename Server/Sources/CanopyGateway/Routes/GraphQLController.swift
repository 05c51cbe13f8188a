import CanopyAssets
import CanopyPlanner
import CanopyRequestStore
import CanopyWAL
import GraphQL
import Hummingbird
import Logging

/// `/graphql`: authenticates the bearer token, parses and validates the
/// document, and answers each root field with one SQL statement run under
/// the caller's identity. A request that cannot run throws its
/// ``APIError``; errors of single fields are data beside the others' answers.
struct GraphQLController {
    let database: RequestDatabase
    let configuration: GatewayConfiguration
    let authenticator: Authenticator
    let recordSchemas: RecordSchemas
    /// Signs asset download URLs into answers that hold assets (nil: no asset store).
    let assetURLs: (@Sendable (Logger) async throws -> AssetURLSigner)?
    /// One new introspection document answered at a time (``Introspection``).
    let introspectionGates = Introspection.Gates()

    func register(on router: Router<CanopyRequestContext>) {
        router.post("graphql") { request, context in
            try await handlePost(request, context: context)
        }
        router.get("graphql") { request, context in
            try await handleGet(request, context: context)
        }
    }

    func handlePost(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        var context = context
        try await authenticator.authenticate(request, context: &context, allowingAnonymous: true)
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: configuration.maximumBodySize)
        } catch {
            throw APIError(.limitExceeded, "the request body is larger than the limit of \(configuration.maximumBodySize) bytes",
                           status: .contentTooLarge)
        }
        let graphQLRequest: GraphQLHTTPRequest
        do {
            graphQLRequest = try GraphQLHTTPRequest(body: try buffer.withUnsafeReadableBytes { bytes throws(QueryError) in
                try JSONValue(parsing: bytes)
            })
        } catch {
            throw APIError(error, requestID: context.requestID, logger: context.logger).with(status: .badRequest)
        }
        return try await execute(graphQLRequest, allowMutations: true, readAfter: request.canopyPosition, device: request.canopyDevice, context: context)
    }

    func handleGet(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        var context = context
        try await authenticator.authenticate(request, context: &context, allowingAnonymous: true)
        let parameters: FormEncodedQuery
        do {
            parameters = try FormEncodedQuery(request.uri.query.map { Substring($0) } ?? "")
        } catch {
            throw APIError(.badRequest, error.message)
        }
        guard let query = parameters["query"] else {
            throw APIError(.badRequest, "GET /graphql needs a query parameter")
        }
        var variables: [String: JSONValue] = [:]
        if let text = parameters["variables"], !text.isEmpty {
            switch Result(catching: { () throws(QueryError) in try JSONValue(parsing: text) }) {
            case .success(.object(let decoded)): variables = decoded
            case .success(let other): throw APIError(.badRequest, "the variables parameter must be a JSON object, not \(other.typeName)")
            case .failure(let error): throw APIError(.badRequest, "the variables parameter is not JSON: \(error.message)")
            }
        }
        let graphQLRequest = GraphQLHTTPRequest(query: query, variables: variables, operationName: parameters["operationName"])
        return try await execute(graphQLRequest, allowMutations: false, readAfter: request.canopyPosition, context: context)
    }

    func execute(
        _ graphQLRequest: GraphQLHTTPRequest, allowMutations: Bool, readAfter: WALPosition?, device: String? = nil, context: CanopyRequestContext
    ) async throws -> Response {
        let userID = context.userID
        let check = GraphQLRequestCheck(
            configuration: configuration,
            maximumCost: userID == nil ? configuration.limits.anonymousMaximumQueryCost : configuration.limits.maximumQueryCost
        )
        // Without a token, a document is at most 64 KiB (issue 64): the
        // public database's reads need no more, and a long one costs its
        // length to parse however it is refused.
        let limit = configuration.limits.anonymousMaximumDocumentBytes
        if userID == nil, graphQLRequest.query.utf8.count > limit {
            throw APIError(.limitExceeded, "a document sent without a token is at most \(limit) bytes (this one is \(graphQLRequest.query.utf8.count)); sign in to send a longer one",
                           status: .contentTooLarge)
        }
        let parsed: ParsedRequest
        let fields: [SelectedField]
        do {
            parsed = try check.parse(graphQLRequest)
            if parsed.operation.operation != .query && !allowMutations {
                throw QueryError(.badRequest, "GET /graphql runs queries only; send mutations with POST")
            }
            let roots = try parsed.rootFields()
            if roots.contains(where: { $0.name == "__schema" || $0.name == "__type" }) {
                try await checkIntrospection(roots, in: parsed, userID: userID)
            }
            if ParsedRequest.isIntrospectionOnly(roots) {
                return try await Introspection.answer(parsed, roots: roots, gate: introspectionGates.gate(signedIn: userID != nil))
            }
            fields = try check.costChecked(roots, in: parsed)
            // Without a token: a request with nothing open to nobody is
            // refused whole (401, as ever); otherwise the fields that need
            // a caller are errors beside the public reads' answers.
            if userID == nil && !fields.contains(where: { AnonymousAccess.allows($0, in: parsed) && $0.name != "__typename" }) {
                throw APIError(.notAuthenticated, "send Authorization: Bearer <token>: a Canopy token (canopy users token NAME issues one) or an identity provider's JWT; without one only the public database's reads (lookup, records and zoneChanges with scope PUBLIC) are open")
            }
        } catch {
            throw APIError(error, requestID: context.requestID, logger: context.logger)
        }
        var executor = OperationExecutor(
            database: database, configuration: configuration, recordSchemas: recordSchemas, request: parsed,
            userID: userID, requestID: context.requestID, logger: context.logger
        )
        executor.readAfter = readAfter
        executor.device = device
        var entries: [(key: String, json: String?)] = []
        var errors: [APIError] = []
        for field in fields {
            if userID == nil && !AnonymousAccess.allows(field, in: parsed) {
                var refusal = AnonymousAccess.refusal(of: field)
                refusal.path = [field.responseKey]
                refusal.locations = parsed.location(of: field.field)
                errors.append(refusal)
                entries.append((field.responseKey, nil))
                continue
            }
            do {
                var json = try await executor.resolve(field)
                // Marked assets (sql/functions/asset_marks.sql) signed, every
                // mark removed; nothing else is ever signed (issue 64).
                if let text = json, AssetURLSigner.mayHoldAssets(text) {
                    json = try await assetURLs?(context.logger).addingDownloadURLs(to: text) ?? AssetURLSigner.removingMarks(from: text)
                }
                entries.append((field.responseKey, json))
            } catch {
                var apiError = APIError(error, requestID: context.requestID, logger: context.logger)
                // No answer at all while the database is away: 503, ask again.
                if apiError.code == .serviceUnavailable { throw apiError }
                if apiError.path.isEmpty { apiError.path = [field.responseKey] }
                if apiError.locations.isEmpty { apiError.locations = parsed.location(of: field.field) }
                errors.append(apiError)
                entries.append((field.responseKey, nil))
            }
        }
        var response = GraphQLResponse.data(entries, errors: errors, requestID: context.requestID)
        // What this client has seen, to send back (on any gateway).
        // (Not the stand-in for a position that could not be read: sent
        // back, it would keep this client on the primary for good.)
        if let position = executor.runner.positionSeen {
            response.headers[.canopyPosition] = position.description
        }
        return response
    }

    /// Introspection is open to whom `--introspection` says, and within
    /// `--max-introspection-cost` (``IntrospectionCost``), checked before
    /// the executor writes anything.
    func checkIntrospection(_ roots: [SelectedField], in parsed: ParsedRequest, userID: Int64?) async throws {
        switch configuration.limits.introspection {
        case .open: break
        case .signedIn where userID != nil: break
        case .signedIn:
            throw APIError(.notAuthenticated, "this server answers introspection (__schema, __type) to signed-in callers only: send Authorization: Bearer <token>")
        case .off:
            throw APIError(.permissionFailure, "this server does not answer introspection (__schema, __type): its operator turned it off (--introspection off); the schema is Server/schema/canopy.graphql", status: .forbidden)
        }
        try await Introspection.checkCost(roots, in: parsed, maximum: configuration.limits.maximumIntrospectionCost)
    }
}
