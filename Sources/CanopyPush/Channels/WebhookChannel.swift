import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore

/// POSTs a notification to an owner's URL, signed as Stripe signs its
/// webhooks: `Canopy-Signature: t=<unix time>,v1=<hex HMAC-SHA256(secret,
/// "<t>.<body>")>` (the time stops replays; the receiver compares in
/// constant time). Redirects are not followed (the client is configured so).
struct WebhookChannel: Sendable {
    let client: HTTPClient
    let timeout: Duration

    func send(_ delivery: ClaimedDelivery, url: String, secret: [UInt8], now: Date = Date()) async -> PushOutcome {
        let body = PushPayload.webhook(delivery)
        let time = Int(now.timeIntervalSince1970)
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Canopy-Signature", value: Self.signature(body: body, time: time, secret: secret))
        request.headers.add(name: "Canopy-Notification", value: delivery.notificationID)
        request.headers.add(name: "User-Agent", value: "Canopy-Webhook/1")
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: TimeAmount(timeout))
            let retryAfter = HTTPRetryAfter.parse(response.headers.first(name: "Retry-After"))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            switch response.status.code {
            case 200..<300: return .delivered
            case 410: return .gone(reason: "the webhook answered 410 Gone")
            default: return .retry(reason: "the webhook answered \(response.status.code)", after: retryAfter)
            }
        } catch {
            return .retry(reason: "the webhook could not be reached: \(error)", after: nil)
        }
    }

    /// `t=<time>,v1=<hex>`.
    static func signature(body: String, time: Int, secret: [UInt8]) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(time).\(body)".utf8), using: SymmetricKey(data: secret))
        return "t=\(time),v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
