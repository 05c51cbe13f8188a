import CanopyAssets
import CanopyEncoding
import CanopyPlanner
import CanopyRequestStore
import CanopyWAL
import Foundation
import GraphQL
import Hummingbird
import Logging
import PostgresNIO

/// `/graphql`: authenticates the bearer token, parses and validates the
/// document, and answers each root field with one SQL statement run under
/// the caller's identity.
struct GraphQLController {
    let database: RequestDatabase
    let configuration: GatewayConfiguration
    let authenticator: Authenticator
    /// Signs asset download URLs into answers that hold assets (nil: no asset store).
    let assetURLs: (@Sendable (Logger) async throws -> AssetURLSigner)?

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
        if let failure = await authenticator.authenticate(request, context: &context) { return failure }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: configuration.maximumBodySize)
        } catch {
            return GraphQLResponse.errors(
                [APIError(.limitExceeded, "the request body is larger than the limit of \(configuration.maximumBodySize) bytes")],
                requestID: context.requestID, status: .contentTooLarge
            )
        }
        let graphQLRequest: GraphQLHTTPRequest
        do {
            graphQLRequest = try GraphQLHTTPRequest(body: try buffer.withUnsafeReadableBytes { bytes throws(QueryError) in
                try JSONValue(parsing: bytes)
            })
        } catch {
            return GraphQLResponse.errors([APIError(error, requestID: context.requestID, logger: context.logger)],
                                          requestID: context.requestID, status: .badRequest)
        }
        return await execute(graphQLRequest, allowMutations: true, readAfter: request.canopyPosition, device: request.canopyDevice, context: context)
    }

    func handleGet(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        var context = context
        if let failure = await authenticator.authenticate(request, context: &context) { return failure }
        let parameters: FormEncodedQuery
        do {
            parameters = try FormEncodedQuery(request.uri.query.map { Substring($0) } ?? "")
        } catch {
            return GraphQLResponse.errors([APIError(.badRequest, error.message)], requestID: context.requestID, status: .badRequest)
        }
        guard let query = parameters["query"] else {
            return GraphQLResponse.errors(
                [APIError(.badRequest, "GET /graphql needs a query parameter")],
                requestID: context.requestID, status: .badRequest
            )
        }
        var variables: [String: JSONValue] = [:]
        if let text = parameters["variables"], !text.isEmpty {
            let problem: String
            switch Result(catching: { () throws(QueryError) in try JSONValue(parsing: text) }) {
            case .success(.object(let decoded)):
                variables = decoded
                problem = ""
            case .success(let other): problem = "the variables parameter must be a JSON object, not \(other.typeName)"
            case .failure(let error): problem = "the variables parameter is not JSON: \(error.message)"
            }
            if !problem.isEmpty {
                return GraphQLResponse.errors([APIError(.badRequest, problem)], requestID: context.requestID, status: .badRequest)
            }
        }
        let graphQLRequest = GraphQLHTTPRequest(query: query, variables: variables, operationName: parameters["operationName"])
        return await execute(graphQLRequest, allowMutations: false, readAfter: request.canopyPosition, context: context)
    }

    func execute(
        _ graphQLRequest: GraphQLHTTPRequest, allowMutations: Bool, readAfter: WALPosition?, device: String? = nil, context: CanopyRequestContext
    ) async -> Response {
        var parsed: ParsedRequest
        do {
            parsed = try ParsedRequest(
                query: graphQLRequest.query,
                variables: graphQLRequest.variables ?? [:],
                operationName: graphQLRequest.operationName,
                limits: .init(maximumDepth: configuration.maximumDepth, maximumAliases: configuration.maximumAliases)
            )
            parsed.publicURL = configuration.publicURL
            if parsed.operation.operation != .query && !allowMutations {
                throw QueryError(.badRequest, "GET /graphql runs queries only; send mutations with POST")
            }
            if try parsed.isIntrospectionOnly() {
                return try await introspect(graphQLRequest)
            }
        } catch {
            let apiError = APIError(error, requestID: context.requestID, logger: context.logger)
            return GraphQLResponse.errors([apiError], requestID: context.requestID, status: apiError.httpStatus)
        }
        guard let userID = context.userID else {
            return GraphQLResponse.errors([APIError(.notAuthenticated, "not authenticated")], requestID: context.requestID, status: .unauthorized)
        }
        do {
            let fields = try parsed.rootFields()
            try QueryCost.check(fields, in: parsed, maximum: configuration.limits.maximumQueryCost)
            var executor = OperationExecutor(
                database: database, configuration: configuration, request: parsed,
                userID: userID, requestID: context.requestID, logger: context.logger
            )
            executor.readAfter = readAfter
            executor.device = device
            var entries: [(key: String, json: String?)] = []
            var errors: [APIError] = []
            for field in fields {
                do {
                    var json = try await executor.resolve(field)
                    if let assetURLs, let text = json, AssetURLSigner.mayHoldAssets(text) {
                        json = try await assetURLs(context.logger).addingDownloadURLs(to: text)
                    }
                    entries.append((field.responseKey, json))
                } catch {
                    var apiError = APIError(error, requestID: context.requestID, logger: context.logger)
                    if apiError.code == .serviceUnavailable {
                        return GraphQLResponse.errors([apiError], requestID: context.requestID, status: .serviceUnavailable)
                    }
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
            if let replicas = database.replicas, let position = readAfter.later(replicas.lastWrite(of: userID)),
               position != ReplicaSet.unknownPosition {
                response.headers[.canopyPosition] = position.description
            }
            return response
        } catch {
            let apiError = APIError(error, requestID: context.requestID, logger: context.logger)
            return GraphQLResponse.errors([apiError], requestID: context.requestID, status: apiError.httpStatus)
        }
    }

    /// Introspection, answered by GraphQLSwift's executor over the schema.
    func introspect(_ request: GraphQLHTTPRequest) async throws -> Response {
        let result = try await graphql(
            schema: GraphQLAPI.schema, request: request.query,
            variableValues: (request.variables ?? [:]).mapValues(\.map), operationName: request.operationName
        )
        let data = try GraphQLJSONEncoder().encode(result)
        return GraphQLResponse.json(String(decoding: data, as: UTF8.self), status: .ok)
    }
}

/// The body of a GraphQL request over HTTP (and a WebSocket `subscribe`'s payload).
struct GraphQLHTTPRequest {
    var query: String
    var variables: [String: JSONValue]?
    var operationName: String?

    init(query: String, variables: [String: JSONValue]?, operationName: String?) {
        self.query = query
        self.variables = variables
        self.operationName = operationName
    }

    /// Reads `{"query": "...", "variables": {...}, "operationName": "..."}`;
    /// `variables` and `operationName` may be null or absent.
    init(body: JSONValue) throws(QueryError) {
        let shape = #"the body must be a JSON object: {"query": "...", "variables": {...}, "operationName": "..."}"#
        guard case .object(let members) = body else { throw QueryError(.badRequest, shape) }
        guard case .string(let query)? = members["query"] else { throw QueryError(.badRequest, #"\#(shape); "query" must be a string"#) }
        self.query = query
        switch members["variables"] {
        case nil, .null?: variables = nil
        case .object(let given)?: variables = given
        case let other?: throw QueryError(.badRequest, #""variables" must be a JSON object, not \#(other.typeName)"#)
        }
        switch members["operationName"] {
        case nil, .null?: operationName = nil
        case .string(let name)?: operationName = name
        case let other?: throw QueryError(.badRequest, #""operationName" must be a string, not \#(other.typeName)"#)
        }
    }
}
