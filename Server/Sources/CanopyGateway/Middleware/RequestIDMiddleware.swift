import HTTPTypes
import Hummingbird

/// Echoes the request id in `X-Request-ID`, so a client can quote it and an
/// operator can find the matching log lines.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await responding(to: request, context: context, next: next)
        response.headers[.requestID] = context.requestID
        return response
    }
}

extension HTTPField.Name {
    static let requestID = Self("X-Request-ID")!
    /// The raw nonce the app gave its identity provider; a JWT's `nonce`
    /// claim must then be it or its SHA-256 (docs/API.md §10).
    static let canopyNonce = Self("Canopy-Nonce")!
}
