import AsyncHTTPClient
import Crypto
import Foundation
import JWTKit
import NIOCore
import Synchronization

/// Sends a background notification to Apple's push service over HTTP/2
/// (async-http-client negotiates h2 by ALPN), with token authentication:
/// an ES256 JWT from the team's `.p8` key (``APNsTokenSigner``). The
/// notification is silent (`content-available`, priority 5, push type
/// `background`) and collapses per device.
struct APNsChannel: Sendable {
    let client: HTTPClient
    let signer: APNsTokenSigner
    let productionURL: String
    let sandboxURL: String
    let timeout: Duration

    func send(_ delivery: ClaimedDelivery, token: String, environment: String, topic: String) async -> PushOutcome {
        let base = environment == "SANDBOX" ? sandboxURL : productionURL
        let jwt: String
        do {
            jwt = try await signer.token()
        } catch {
            return .retry(reason: "the APNs token could not be signed: \(error)", after: .seconds(60))
        }
        var request = HTTPClientRequest(url: "\(base)/3/device/\(token)")
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(jwt)")
        request.headers.add(name: "apns-topic", value: topic)
        request.headers.add(name: "apns-push-type", value: "background")
        request.headers.add(name: "apns-priority", value: "5")
        request.headers.add(name: "apns-expiration", value: String(Int(Date().timeIntervalSince1970) + 86_400))
        request.headers.add(name: "apns-collapse-id", value: delivery.deviceID)
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: PushPayload.apns(delivery)))
        do {
            let response = try await client.execute(request, timeout: TimeAmount(timeout))
            let retryAfter = PushOutcome.retryAfter(response.headers.first(name: "Retry-After"))
            let body = try? await response.body.collect(upTo: 64 * 1024)
            let reason = body.flatMap { try? JSONDecoder().decode(APNsFailure.self, from: Data(buffer: $0)) }?.reason ?? ""
            switch (response.status.code, reason) {
            case (200, _): return .delivered
            case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
                return .gone(reason: "APNs answered \(response.status.code) \(reason)")
            case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"):
                signer.discard()
                return .retry(reason: "APNs answered 403 \(reason)", after: .seconds(1))
            default:
                return .retry(reason: "APNs answered \(response.status.code) \(reason)", after: retryAfter)
            }
        } catch {
            return .retry(reason: "APNs could not be reached: \(error)", after: nil)
        }
    }
}

private struct APNsFailure: Decodable {
    var reason: String
}

/// The provider token APNs wants: ES256, `kid` the key ID, `iss` the team
/// ID, `iat` now; made once and reused for 50 minutes (APNs refuses one
/// older than an hour, and one renewed more often than every 20 minutes).
final class APNsTokenSigner: Sendable {
    private let keys: JWTKeyCollection
    private let credentials: APNsCredentials
    private let cached = Mutex<(token: String, madeAt: Date)?>(nil)

    init(_ credentials: APNsCredentials) async throws {
        self.credentials = credentials
        keys = JWTKeyCollection()
        await keys.add(ecdsa: try Self.privateKey(credentials), kid: JWKIdentifier(string: credentials.keyID))
    }

    static func privateKey(_ credentials: APNsCredentials) throws(PushError) -> ES256PrivateKey {
        do {
            return try ES256PrivateKey(pem: credentials.keyPEM)
        } catch {
            throw PushError(.invalidConfiguration, "the APNs key is not a P-256 private key in PEM (the .p8 file Apple gives): \(error)")
        }
    }

    func token(now: Date = Date()) async throws -> String {
        if let (token, madeAt) = cached.withLock({ $0 }), now.timeIntervalSince(madeAt) < 50 * 60 {
            return token
        }
        let token = try await keys.sign(
            APNsClaims(iss: IssuerClaim(value: credentials.teamID), iat: IssuedAtClaim(value: now)),
            kid: JWKIdentifier(string: credentials.keyID))
        cached.withLock { $0 = (token, now) }
        return token
    }

    /// APNs said the token expired or is invalid: make a new one next time.
    func discard() {
        cached.withLock { $0 = nil }
    }
}

struct APNsClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
