import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Supplies the bearer token for each request: a Canopy token, or a
/// provider's JWT (Sign in with Apple, Google…). Called with `true` after
/// the server answered 401, so a provider's token can be refreshed.
public typealias TokenProvider = @Sendable (_ refresh: Bool) async throws -> String

/// Keeps the current token, so every request does not call the provider.
/// Without a provider there is no token: requests go without
/// `Authorization` (the public database's reads).
actor TokenCache {
    private let provider: TokenProvider?
    private var token: String?

    init(provider: TokenProvider?) {
        self.provider = provider
    }

    func current() async throws -> String? {
        guard let provider else { return nil }
        if let token { return token }
        let fresh = try await provider(false)
        token = fresh
        return fresh
    }

    /// After a 401 with `stale`: asks the provider for a new one (once, even
    /// when many requests saw the 401); nil without a provider.
    func refresh(after stale: String?) async throws -> String? {
        guard let provider else { return nil }
        if let token, token != stale { return token }
        let fresh = try await provider(true)
        token = fresh
        return fresh
    }
}

/// POSTs GraphQL documents to `/graphql` and turns the answers into data or
/// a `CanopyError`: the one place HTTP statuses and error codes are read.
struct GraphQLTransport: Sendable {
    let baseURL: URL
    let session: URLSession
    let tokens: TokenCache
    /// Sent as `Canopy-Device` once set, so the server does not push this
    /// device's own changes to it.
    let device = OriginDevice()

    var endpoint: URL { baseURL.appendingPathComponent("graphql") }

    /// Runs `document` and returns its `data`; any error in the answer is thrown.
    func execute(_ document: String, _ variables: [String: JSON] = [:]) async throws -> JSON {
        let body = JSON.object(["query": .string(document), "variables": .object(variables)]).text
        var token = try await tokens.current()
        for attempt in 0..<2 {
            var request = URLRequest(url: endpoint)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            if let device = device.id { request.setValue(device, forHTTPHeaderField: "Canopy-Device") }
            request.httpBody = Data(body.utf8)
            let (data, http) = try await send(request)
            if http.statusCode == 401, attempt == 0, token != nil {
                token = try await tokens.refresh(after: token)
                continue
            }
            return try Self.data(of: data, http)
        }
        throw CanopyError(.notAuthenticated, "the server refused the token")
    }

    /// Sends a request; a connection failure is `.networkFailure`.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw CanopyError(.networkFailure, "\(request.url?.absoluteString ?? "the server") could not be reached: \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw CanopyError(.serverResponseLost, "not an HTTP answer")
        }
        return (data, http)
    }

    /// The `data` of an answer, or the error it carries (HTTP status first: 401, 413, 429, 503).
    static func data(of body: Data, _ http: HTTPURLResponse) throws -> JSON {
        let retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init)
        let answer = try? JSON(parsing: body)
        if let error = answer?["errors"]?.array?.first {
            throw Self.error(error, retryAfter: retryAfter, status: http.statusCode)
        }
        switch http.statusCode {
        case 200..<300: break
        case 401: throw CanopyError(.notAuthenticated, "the server refused the token")
        case 413: throw CanopyError(.limitExceeded, "the request is larger than the server accepts")
        case 429: throw CanopyError(.requestRateLimited, "too many requests", retryAfterSeconds: retryAfter ?? 1)
        case 503: throw CanopyError(.serviceUnavailable, "the service is unavailable", retryAfterSeconds: retryAfter ?? 1)
        case 502, 504: throw CanopyError(.serviceUnavailable, "HTTP \(http.statusCode) from a proxy", retryAfterSeconds: retryAfter ?? 1)
        default: throw CanopyError(.serverResponseLost, "HTTP \(http.statusCode)")
        }
        guard let data = answer?["data"], !data.isNull else {
            throw CanopyError(.serverResponseLost, "an answer without data")
        }
        return data
    }

    static func error(_ error: JSON, retryAfter: Double?, status: Int) -> CanopyError {
        let message = error["message"]?.string ?? "no message"
        let code = error["extensions"]?["code"]?.string ?? (status == 400 ? "BAD_REQUEST" : "INTERNAL_ERROR")
        // A 429 is the rate limit (CKError.requestRateLimited); LIMIT_EXCEEDED
        // otherwise means the request itself is too large and must be split.
        if status == 429 {
            return CanopyError(.requestRateLimited, message, retryAfterSeconds: retryAfter ?? 1)
        }
        let retry = retryAfter ?? (code == "SERVICE_UNAVAILABLE" ? 1 : nil)
        return CanopyError.fromServer(code: code, message: message, retryAfterSeconds: retry,
                                      outcomeUnknown: error["extensions"]?["outcomeUnknown"]?.bool == true)
    }
}
