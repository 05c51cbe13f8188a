import CanopyIdentity
import Foundation

/// A provider's JWKS (RFC 7517) as fetched over HTTP or read from a file:
/// `KeySet(parsing:)` keeps the public RS256/ES256 keys and names the rest.
struct KeySetTarget: FuzzTarget {
    static let name = "jwks"

    func run(_ bytes: UnsafeRawBufferPointer) {
        _ = try? KeySet(parsing: Data(bytes))
    }

    func generatedSeeds() async throws -> [String: Data] {
        ["es256": JWTTarget.jwks]
    }
}
