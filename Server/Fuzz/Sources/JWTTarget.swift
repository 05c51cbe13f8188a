import CanopyEncoding
import CanopyIdentity
import Crypto
import Foundation
import JWTKit
import Logging

/// A sign-in token (docs/API.md §10) as `TokenVerifier` reads it: the JWT's
/// parts, its header (alg, kid), the issuer's provider and key, jwt-kit's
/// signature check, then the claims. Two providers: ES256 with a key set
/// (read from JWKS text, as from a file) and HS256 with a shared secret.
/// The seeds are tokens both sign, so mutations start from valid ones.
struct JWTTarget: FuzzTarget {
    static let name = "jwt"
    static let hsSecret = Array("canopy-fuzz-shared-secret-of-32+bytes".utf8)
    static let ecKey = try! P256.Signing.PrivateKey(rawRepresentation: Data(repeating: 0x42, count: 32))
    /// The token times are checked against this instant, so seeds never expire.
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static var jwks: Data {
        let raw = ecKey.publicKey.rawRepresentation
        let x = Base64URL.encode(raw.prefix(32)), y = Base64URL.encode(raw.suffix(32))
        return Data(#"{"keys":[{"kty":"EC","crv":"P-256","kid":"fuzz-es","alg":"ES256","use":"sig","x":"\#(x)","y":"\#(y)"}]}"#.utf8)
    }

    static let verifier: TokenVerifier = {
        let configuration = AuthConfiguration(providers: [
            IdentityProvider(name: "es", issuer: "https://es.example", audiences: ["canopy-app"],
                             keySource: .jwksFile(path: "fuzz.jwks", keys: try! KeySet(parsing: jwks))),
            IdentityProvider(name: "hs", issuer: "https://hs.example", otherIssuers: ["hs.example"], audiences: ["canopy-app"],
                             keySource: .hs256Secret(hsSecret)),
        ])
        var quiet = Logger(label: "canopy-fuzz")
        quiet.logLevel = .critical
        let logger = quiet
        return blocking { await TokenVerifier(configuration: configuration, logger: logger) }
    }()

    func run(_ bytes: UnsafeRawBufferPointer) {
        let token = bytes.text
        let verifier = Self.verifier
        let nonce: String? = token.hasSuffix("!") ? "raw-nonce" : nil
        _ = blocking { try? await verifier.verify(token, nonce: nonce, now: Self.now) }
    }

    struct Claims: JWTPayload {
        var iss: String
        var aud: [String]
        var sub: String
        var exp: Int
        var nbf: Int?
        var name: String?
        var email: String?
        var email_verified: Bool?
        var nonce: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    func generatedSeeds() async throws -> [String: Data] {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: Self.ecKey), kid: "fuzz-es")
        let hs = JWTKeyCollection()
        await hs.add(hmac: HMACKey(from: Self.hsSecret), digestAlgorithm: .sha256)
        let expires = Int(Self.now.timeIntervalSince1970) + 3600
        let nonceHash = Hex.encode(SHA256.hash(data: Data("raw-nonce".utf8)))
        return [
            "es256": Data(try await keys.sign(Claims(iss: "https://es.example", aud: ["canopy-app"], sub: "user-1", exp: expires,
                                                       name: "Ada Lovelace", email: "ada@example.com", email_verified: true), kid: "fuzz-es").utf8),
            "es256-nonce": Data(try await keys.sign(Claims(iss: "https://es.example", aud: ["x", "canopy-app"], sub: "user-2", exp: expires,
                                                             nbf: expires - 7200, nonce: nonceHash), kid: "fuzz-es").utf8),
            "hs256": Data(try await hs.sign(Claims(iss: "hs.example", aud: ["canopy-app"], sub: "user-3", exp: expires)).utf8),
            "expired": Data(try await hs.sign(Claims(iss: "https://hs.example", aud: ["canopy-app"], sub: "user-4", exp: 1000)).utf8),
        ]
    }
}

/// Runs async work to the end from libFuzzer's synchronous callback.
func blocking<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
    let result = BlockingResult<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        result.value = await work()
        done.signal()
    }
    done.wait()
    return result.value!
}

/// Where ``blocking(_:)`` leaves the value: written by the task before it
/// signals, read after the wait.
final class BlockingResult<T>: @unchecked Sendable {
    var value: T?
}
