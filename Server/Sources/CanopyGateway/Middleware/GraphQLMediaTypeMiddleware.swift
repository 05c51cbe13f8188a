import HTTPTypes
import Hummingbird

/// GraphQL-over-HTTP's media types for `/graphql`: a client that accepts
/// `application/graphql-response+json` gets it as the response's type
/// (status codes are the same either way: 4xx when a request does not
/// execute, 200 when it does); `application/json` otherwise. An `Accept`
/// that allows neither is 406.
struct GraphQLMediaTypeMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext

    static let graphQLResponse = "application/graphql-response+json"

    enum Choice { case graphQLResponse, json, neither }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path == "/graphql", request.method != .options else {
            return try await next(request, context)
        }
        switch Self.choose(request.headers[values: .accept]) {
        case .json:
            return try await next(request, context)
        case .graphQLResponse:
            var response = try await responding(to: request, context: context, next: next)
            if response.headers[.contentType]?.hasPrefix("application/json") == true {
                response.headers[.contentType] = "\(Self.graphQLResponse); charset=utf-8"
            }
            return response
        case .neither:
            throw APIError(.badRequest, "Accept allows neither \(Self.graphQLResponse) nor application/json", status: .notAcceptable)
        }
    }

    /// The media type an `Accept` header prefers (by q, then by order; a
    /// tie between the two JSON types goes to graphql-response+json).
    static func choose(_ values: [String]) -> Choice {
        let ranges = values.flatMap { $0.split(separator: ",") }
        if ranges.isEmpty { return .json }
        var best: (choice: Choice, q: Double) = (.neither, 0)
        for range in ranges {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let type = parts.first else { continue }
            let q = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            guard q > 0 else { continue }
            let choice: Choice
            switch type {
            case graphQLResponse: choice = .graphQLResponse
            case "application/json", "application/*", "*/*": choice = .json
            default: continue
            }
            if q > best.q || (q == best.q && choice == .graphQLResponse) { best = (choice, q) }
        }
        return best.choice
    }
}
