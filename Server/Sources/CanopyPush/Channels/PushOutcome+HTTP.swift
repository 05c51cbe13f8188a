import AsyncHTTPClient
import CanopyOutbound
import Foundation
import NIOCore

extension PushOutcome {
    /// Sends a request and reads its status the way Web Push and webhooks
    /// answer: 2xx accepted, `gone` statuses for good, anything else (or
    /// no answer) retried, after `Retry-After` when given. The URL is the
    /// user's, so it goes through the outbound check: a refusal is
    /// `.refused`, and nothing was sent.
    static func of(_ request: HTTPClientRequest, on client: OutboundHTTPClient, timeout: Duration, service: String, gone: Set<UInt>) async -> PushOutcome {
        do {
            let response = try await client.execute(request, timeout: timeout)
            let retryAfter = retryAfter(response.headers.first(name: "Retry-After"))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            let code = response.status.code
            if (200..<300).contains(code) { return .delivered }
            if gone.contains(code) { return .gone(reason: "\(service) answered \(code)") }
            return .retry(reason: "\(service) answered \(code)", after: retryAfter)
        } catch let refusal as OutboundError {
            return .refused(reason: "\(service) may not be called: \(refusal.message)")
        } catch {
            return .retry(reason: "\(service) could not be reached: \(error)", after: nil)
        }
    }

    /// `Retry-After` in seconds, at most an hour (the date form is rare
    /// from push services).
    static func retryAfter(_ value: String?) -> Duration? {
        guard let value, let seconds = Int(value.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return .seconds(min(seconds, 3600))
    }
}
