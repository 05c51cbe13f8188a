import AsyncHTTPClient
import CanopyOutbound
import CanopyEncoding
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import CanopyRequestStore
import Tracing

/// POSTs a notification to an owner's URL, signed as Stripe signs its
/// webhooks: `Canopy-Signature: t=<unix time>,v1=<hex HMAC-SHA256(secret,
/// "<t>.<body>")>` (the time stops replays; the receiver compares in
/// constant time). Redirects are not followed (the client is configured so).
///
/// A notification of a traced write continues its trace (docs/TRACING.md):
/// with tracing on, the call is a client span, child of the write's request
/// span, and sends that span's `traceparent`; with it off, the write's
/// `traceparent` is sent as it was stored.
struct WebhookChannel: Sendable {
    let client: OutboundHTTPClient
    let timeout: Duration
    var tracing: CanopyTracing? = nil

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
        guard let traceParent = delivery.traceParent else {
            return await PushOutcome.of(request, on: client, timeout: timeout, service: "the webhook", gone: [410])
        }
        guard let tracing else {
            request.headers.add(name: "traceparent", value: traceParent)
            return await PushOutcome.of(request, on: client, timeout: timeout, service: "the webhook", gone: [410])
        }
        let parent = tracing.context(extractingFrom: ["traceparent": traceParent], using: DictionaryExtractor())
        let span = tracing.tracer.startSpan("webhook POST", context: parent, ofKind: .client)
        defer { span.end() }
        span.updateAttributes { attributes in
            // Not the URL: it is the user's.
            attributes["http.request.method"] = "POST"
            attributes["canopy.push.channel"] = "webhook"
            attributes["canopy.push.attempt"] = delivery.attempts + 1
            attributes["canopy.push.notification_id"] = delivery.notificationID
        }
        tracing.tracer.inject(span.context, into: &request.headers, using: HTTPHeadersInjector())
        let outcome = await PushOutcome.of(request, on: client, timeout: timeout, service: "the webhook", gone: [410])
        span.attributes["canopy.push.outcome"] = outcome.label
        if outcome != .delivered { span.setStatus(.init(code: .error)) }
        return outcome
    }

    /// `t=<time>,v1=<hex>`.
    static func signature(body: String, time: Int, secret: [UInt8]) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(time).\(body)".utf8), using: SymmetricKey(data: secret))
        return "t=\(time),v1=" + Hex.encode(mac)
    }
}

/// Writes `traceparent` (and `tracestate`) into an outgoing request's headers.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
