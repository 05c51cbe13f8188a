import CanopyPlanner

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
