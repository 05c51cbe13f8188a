import Hummingbird
import Logging

/// `--access-log`: a line per request, as Hummingbird's LogRequestsMiddleware
/// writes it, but with the values of the query parameters that are
/// credentials replaced by `***`: Web Services' `ckAPIToken` and
/// `ckWebAuthToken`, and the `signature` of asset download and upload URLs
/// (each a bearer's right on its own), and the token of a web courier's URL,
/// which is in its path (`…/courier/***`). The rest of the path and the
/// other parameters stay.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let logLevel: Logger.Level

    /// The parameters whose values never reach a log.
    static var secretParameters: Set<Substring> { ["ckAPIToken", "ckWebAuthToken", "signature"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        context.logger.log(level: logLevel, "Request", metadata: [
            "hb.request.path": .string(Self.redacted(path: request.uri.path, query: request.uri.query)),
            "hb.request.method": .string(request.method.rawValue),
        ])
        return try await next(request, context)
    }

    /// The path and query with secret parameters' values as `***`.
    static func redacted(path: String, query: String?) -> String {
        var path = path
        if let courier = path.range(of: "/courier/") {
            path = String(path[..<courier.upperBound]) + "***"
        }
        guard let query, !query.isEmpty else { return path }
        let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            return secretParameters.contains(pair[..<equals]) ? "\(pair[..<equals])=***" : String(pair)
        }
        return path + "?" + pairs.joined(separator: "&")
    }
}
