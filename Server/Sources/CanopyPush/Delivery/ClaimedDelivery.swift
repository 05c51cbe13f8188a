import CanopyEncoding
import CanopyPlanner
import Crypto
import Foundation
import PostgresNIO

/// A notification owed to one device, claimed by this deliverer
/// (`canopy.claim_push_deliveries`), with where to send it.
struct ClaimedDelivery: Sendable {
    enum Target: Sendable {
        case apns(token: String, environment: String, topic: String)
        case webPush(endpoint: String, p256dh: [UInt8], auth: [UInt8])
        case webhook(url: String, secret: [UInt8])
    }

    var deviceID: String
    var version: Int64
    var subscriptionIDs: [String]
    var attempts: Int
    var firstQueuedAt: Date
    var target: Target
    var userRecordName: String
    /// The `traceparent` of the latest traced change this tells of
    /// (migrations/0033): the webhook call continues that trace.
    var traceParent: String? = nil

    /// The channel's name in metrics and logs.
    var channel: String {
        switch target {
        case .apns: "apns"
        case .webPush: "web_push"
        case .webhook: "webhook"
        }
    }

    /// The same for every attempt at this content (device and version), so
    /// a receiver can drop a duplicate; says nothing about either.
    var notificationID: String {
        let digest = SHA256.hash(data: Data("\(deviceID):\(version)".utf8))
        return Hex.encode(digest.prefix(16))
    }

    static func decode(_ row: PostgresRow) throws -> ClaimedDelivery? {
        let (device, version, sids, attempts, queued, kind, token, environment, topic, endpoint, p256dh, auth, url, secret, user, trace) =
            try row.decode((String, Int64, [String], Int32, Date, String, String?, String?, String?, String?, ByteBuffer?, ByteBuffer?, String?, ByteBuffer?, String, String?).self)
        let target: Target
        switch kind {
        case "APNS":
            guard let token, let environment, let topic else { return nil }
            target = .apns(token: token, environment: environment, topic: topic)
        case "WEB_PUSH":
            guard let endpoint, let p256dh, let auth else { return nil }
            target = .webPush(endpoint: endpoint, p256dh: Array(buffer: p256dh), auth: Array(buffer: auth))
        case "WEBHOOK":
            guard let url, let secret else { return nil }
            target = .webhook(url: url, secret: Array(buffer: secret))
        default:
            return nil
        }
        return ClaimedDelivery(
            deviceID: device, version: version, subscriptionIDs: sids, attempts: Int(attempts),
            firstQueuedAt: queued, target: target, userRecordName: user, traceParent: trace
        )
    }
}

/// What a channel reports of one attempt.
enum PushOutcome: Sendable, Equatable {
    /// The push service (or webhook) accepted it.
    case delivered
    /// Try again later: after `after` when the service said (Retry-After),
    /// else after the deliverer's back-off.
    case retry(reason: String, after: Duration?)
    /// The token or endpoint is gone for good: the device is removed.
    case gone(reason: String)
    /// The URL failed the outbound check (it names or resolves to an
    /// address inside the operator's network): nothing was sent. Retried
    /// with back-off like a failure, since names change, and given up as
    /// one after a day.
    case refused(reason: String)

    var label: String {
        switch self {
        case .delivered: "delivered"
        case .retry: "retry"
        case .gone: "gone"
        case .refused: "refused"
        }
    }
}

/// The notification's content: only which subscriptions fired and an ID,
/// never a zone's or record's name or data (docs/API.md §14).
enum PushPayload {
    /// `{"canopy":{"sid":[…],"nid":"…"}}`, inside APNs's and Web Push's bodies.
    static func canopyObject(_ delivery: ClaimedDelivery) -> String {
        let ids = delivery.subscriptionIDs.map(jsonString).joined(separator: ",")
        return "{\"sid\":[\(ids)],\"nid\":\(jsonString(delivery.notificationID))}"
    }

    static func apns(_ delivery: ClaimedDelivery) -> String {
        "{\"aps\":{\"content-available\":1},\"canopy\":\(canopyObject(delivery))}"
    }

    static func webPush(_ delivery: ClaimedDelivery) -> String {
        "{\"canopy\":\(canopyObject(delivery))}"
    }

    static func webhook(_ delivery: ClaimedDelivery) -> String {
        let ids = delivery.subscriptionIDs.map(jsonString).joined(separator: ",")
        return "{\"subscriptionIDs\":[\(ids)],\"notificationID\":\(jsonString(delivery.notificationID)),\"userRecordName\":\(jsonString(delivery.userRecordName))}"
    }

    static func jsonString(_ text: String) -> String {
        JSONString.quoted(text)
    }
}
