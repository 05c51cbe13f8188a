import AsyncHTTPClient
import CanopyOutbound
import CanopyEncoding
import Crypto
import Foundation
import NIOCore

/// POSTs a notification to an owner's URL, signed as Stripe signs its
/// webhooks: `Canopy-Signature: t=<unix time>,v1=<hex HMAC-SHA256(secret,
/// "<t>.<body>")>` (the time stops replays; the receiver compares in
/// constant time). Redirects are not followed (the client is configured so).
struct WebhookChannel: Sendable {
    let client: OutboundHTTPClient
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
        return await PushOutcome.of(request, on: client, timeout: timeout, service: "the webhook", gone: [410])
    }

    /// `t=<time>,v1=<hex>`.
    static func signature(body: String, time: Int, secret: [UInt8]) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(time).\(body)".utf8), using: SymmetricKey(data: secret))
        return "t=\(time),v1=" + Hex.encode(mac)
    }
}
