import AsyncHTTPClient
import CanopyOutbound
import CanopyEncoding
import CanopyRequestStore
import Crypto
import Foundation
import JWTKit
import Logging
import NIOCore

/// Sends a Web Push message (RFC 8030) to a browser's push service:
/// encrypted for the browser (``WebPushEncryption``), authenticated with a
/// VAPID JWT (RFC 8292) signed by jwt-kit. `Topic` is the device's ID, so a
/// push service holding an undelivered message replaces it with the newer.
struct WebPushChannel: Sendable {
    let client: OutboundHTTPClient
    let vapid: VAPIDKey
    let subject: String
    let timeout: Duration

    func send(_ delivery: ClaimedDelivery, endpoint: String, p256dh: [UInt8], auth: [UInt8]) async -> PushOutcome {
        guard let url = URL(string: endpoint), let scheme = url.scheme, let host = url.host else {
            return .gone(reason: "the endpoint is not a URL")
        }
        let audience = "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
        let body: [UInt8]
        let jwt: String
        do {
            body = try WebPushEncryption.encrypt(Array(PushPayload.webPush(delivery).utf8), receiverKey: p256dh, authSecret: auth)
            jwt = try await vapid.token(audience: audience, subject: subject)
        } catch {
            return .gone(reason: "the subscription's keys cannot be used: \(error)")
        }
        var request = HTTPClientRequest(url: endpoint)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "vapid t=\(jwt), k=\(vapid.publicKeyBase64URL)")
        request.headers.add(name: "Content-Encoding", value: "aes128gcm")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.headers.add(name: "TTL", value: "86400")
        request.headers.add(name: "Urgency", value: "normal")
        request.headers.add(name: "Topic", value: delivery.deviceID.replacingOccurrences(of: "-", with: ""))
        request.body = .bytes(ByteBuffer(bytes: body))
        return await PushOutcome.of(request, on: client, timeout: timeout, service: "the push service", gone: [404, 410])
    }
}

/// The server's VAPID key pair (P-256), made once and kept in the
/// database (`canopy.server_secrets`, name `vapid`), so every gateway signs
/// with the key browsers subscribed with.
public struct VAPIDKey: Sendable {
    let keys: JWTKeyCollection
    /// The uncompressed public key, base64url: the `applicationServerKey` a
    /// page passes to `pushManager.subscribe`, and the `k=` of each request.
    public let publicKeyBase64URL: String

    /// From the 32 random bytes of the stored secret, as a P-256 scalar.
    public init(secret: Data) async throws {
        let key = try P256.Signing.PrivateKey(rawRepresentation: secret)
        publicKeyBase64URL = Base64URL.encode(key.publicKey.x963Representation)
        keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key))
    }

    /// A token for one push service origin, valid 12 hours (RFC 8292 allows 24).
    func token(audience: String, subject: String, now: Date = Date()) async throws -> String {
        try await keys.sign(VAPIDClaims(
            aud: AudienceClaim(value: audience), exp: ExpirationClaim(value: now.addingTimeInterval(12 * 3600)), sub: SubjectClaim(value: subject)))
    }
}

extension VAPIDKey {
    /// The key every gateway shares: the stored secret `vapid`, made by
    /// whichever process asks first.
    public static func load(from secrets: ServerSecrets, logger: Logger) async throws -> VAPIDKey {
        try await VAPIDKey(secret: try await secrets.key("vapid", logger: logger))
    }
}

/// The VAPID keys a device may be pushed with: the current one, and those
/// rotated out but still inside their window (`canopy secrets rotate
/// vapid`). A browser's subscription is bound to the key it subscribed
/// with, so each device is signed for with its own key while that key is
/// accepted. Keys are built once per secret; which keys are accepted is
/// read through `ServerSecrets` (again every 30 s).
actor VAPIDKeyring {
    private let secrets: ServerSecrets
    private let logger: Logger
    private var built: [Data: VAPIDKey] = [:]

    init(secrets: ServerSecrets, logger: Logger) {
        self.secrets = secrets
        self.logger = logger
    }

    /// The key for a device that subscribed with `publicKey` (nil: before
    /// keys were remembered, the current one); nil when that key was
    /// retired: the subscription cannot be pushed to any more.
    func key(for publicKey: String?) async throws -> VAPIDKey? {
        let keys = try await secrets.keys("vapid", logger: logger)
        for secret in [keys.current] + keys.accepted {
            let key = try await vapidKey(secret)
            if publicKey == nil || key.publicKeyBase64URL == publicKey { return key }
        }
        return nil
    }

    private func vapidKey(_ secret: Data) async throws -> VAPIDKey {
        if let key = built[secret] { return key }
        let key = try await VAPIDKey(secret: secret)
        built[secret] = key
        return key
    }
}

struct VAPIDClaims: JWTPayload {
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var sub: SubjectClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
