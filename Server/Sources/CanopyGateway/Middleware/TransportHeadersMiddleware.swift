import HTTPTypes
import Hummingbird

/// Headers every API answer carries (docs/SECURITY.md, API8):
/// - on `/graphql` and `POST /assets`, refusals included:
///   `X-Content-Type-Options: nosniff` (a JSON answer is never run as a
///   page) and `Cache-Control: no-store` (an answer for one user's token is
///   never kept by a shared cache or the browser's history);
/// - on every answer, when the server's public URL is https (it is reached
///   through TLS, which a proxy in front of it terminates):
///   `Strict-Transport-Security: max-age=31536000`, so a browser that once
///   came over https never falls back to plain http for this host.
struct TransportHeadersMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext

    static let strictTransportSecurity = HTTPField.Name("Strict-Transport-Security")!
    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
    /// A year, as browsers' preload lists expect; subdomains are the operator's to include.
    static let strictTransportValue = "max-age=31536000"

    /// Whether to send HSTS: the public URL is https.
    let behindTLS: Bool

    init(publicURL: String) {
        behindTLS = publicURL.lowercased().hasPrefix("https://")
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await responding(to: request, context: context, next: next)
        let path = request.uri.path
        if path == "/graphql" || (path == "/assets" && request.method == .post) {
            response.headers[Self.contentTypeOptions] = "nosniff"
            response.headers[.cacheControl] = "no-store"
        }
        if behindTLS {
            response.headers[Self.strictTransportSecurity] = Self.strictTransportValue
        }
        return response
    }
}
