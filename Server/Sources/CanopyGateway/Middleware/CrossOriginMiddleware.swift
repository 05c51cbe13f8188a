import HTTPTypes
import Hummingbird

/// The origins whose browser pages may call the gateway (`--cors-origin`,
/// repeatable; none by default). An origin is `scheme://host[:port]`,
/// compared exactly; there is no wildcard.
public struct CrossOriginPolicy: Sendable, Equatable {
    public let origins: Set<String>

    /// Checks each origin; throws a message naming the first bad one.
    public init(origins: [String]) throws {
        var checked: Set<String> = []
        for origin in origins {
            let lowered = origin.lowercased()
            if lowered == "*" || lowered == "null" {
                throw GatewayConfigurationError(message: "--cors-origin \(origin): list each origin the pages are served from (e.g. https://app.example.com); a wildcard or null is never allowed")
            }
            guard lowered.range(of: #"^https?://[a-z0-9.-]+(:[0-9]{1,5})?$|^https?://\[[0-9a-f:]+\](:[0-9]{1,5})?$"#, options: .regularExpression) != nil else {
                throw GatewayConfigurationError(message: "--cors-origin \(origin): an origin is scheme://host[:port], with no path or trailing slash (e.g. https://app.example.com)")
            }
            checked.insert(lowered)
        }
        self.origins = checked
    }

    public static let none = try! CrossOriginPolicy(origins: [])

    func allows(_ origin: String) -> Bool {
        origins.contains(origin.lowercased())
    }
}

/// CORS for the configured origins: a preflight (`OPTIONS` with `Origin`
/// and `Access-Control-Request-Method`) from an allowed origin is answered
/// 204 with the methods and headers a GraphQL client sends; from any other
/// origin it is 403 without CORS headers, so the browser stops there. Other
/// requests from an allowed origin get `Access-Control-Allow-Origin` set to
/// that origin (never `*`), and `Vary: Origin` always.
///
/// Credentials here are bearer tokens in `Authorization`, not cookies, so
/// `Access-Control-Allow-Credentials` is never sent.
struct CrossOriginMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext

    static let allowedMethods = "GET, POST, OPTIONS"
    static let allowedHeaders = "Authorization, Content-Type, Accept, Canopy-Nonce, Canopy-Position, Canopy-Device"
    static let exposedHeaders = "X-Request-ID, Canopy-Position, X-Apple-CloudKit-Web-Auth-Token"
    static let maxAge = "600"

    let policy: CrossOriginPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin] else {
            return try await next(request, context)
        }
        let allowed = policy.allows(origin)
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            guard allowed else {
                return Response(
                    status: .forbidden, headers: [.vary: "Origin", .contentType: "text/plain; charset=utf-8"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "origin \(origin.prefix(200)) is not allowed (the server's --cors-origin list)\n"))
                )
            }
            return Response(status: .noContent, headers: [
                .accessControlAllowOrigin: origin,
                .accessControlAllowMethods: Self.allowedMethods,
                .accessControlAllowHeaders: Self.allowedHeaders,
                .accessControlMaxAge: Self.maxAge,
                .vary: "Origin",
            ])
        }
        var response = try await responding(to: request, context: context, next: next)
        response.headers[values: .vary].append("Origin")
        if allowed {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlExposeHeaders] = Self.exposedHeaders
        }
        return response
    }
}
