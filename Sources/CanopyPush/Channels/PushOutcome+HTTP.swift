import AsyncHTTPClient
import NIOCore

extension PushOutcome {
    /// Sends a request and reads its status the way Web Push and webhooks
    /// answer: 2xx accepted, `gone` statuses for good, anything else (or
    /// no answer) retried, after `Retry-After` when given.
    static func of(_ request: HTTPClientRequest, on client: HTTPClient, timeout: Duration, service: String, gone: Set<UInt>) async -> PushOutcome {
        do {
            let response = try await client.execute(request, timeout: TimeAmount(timeout))
            let retryAfter = HTTPRetryAfter.parse(response.headers.first(name: "Retry-After"))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            let code = response.status.code
            if (200..<300).contains(code) { return .delivered }
            if gone.contains(code) { return .gone(reason: "\(service) answered \(code)") }
            return .retry(reason: "\(service) answered \(code)", after: retryAfter)
        } catch {
            return .retry(reason: "\(service) could not be reached: \(error)", after: nil)
        }
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
