import CanopyEncoding
import Crypto
import Foundation

/// A bearer token, `cnp_<selector>_<secret>`: the selector finds the row, the
/// secret proves possession. Only SHA-256(secret) is ever stored; the token
/// itself exists only in the response to `canopy users add|token`.
/// CloudKit Web Services' container API tokens have the same form with
/// their own prefix, `cka_` (``containerPrefix``).
public struct BearerToken: Sendable {
    public static let prefix = "cnp_"
    /// A container's API token (`ckAPIToken`, `canopy tokens api add`).
    public static let containerPrefix = "cka_"
    /// `cnp_` for a user's token, `cka_` for a container's.
    public let kind: String

    /// 8 random bytes, hex: public, indexes canopy.api_tokens.selector.
    public let selector: String
    /// 32 random bytes, base64url: the secret.
    public let secret: String

    public var string: String { "\(kind)\(selector)_\(secret)" }
    public var secretHash: [UInt8] { Self.hash(secret) }

    /// A fresh token from the system's secure random source.
    public static func generate(kind: String = prefix) -> BearerToken {
        var generator = SystemRandomNumberGenerator()
        let selectorBytes = (0..<8).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let secretBytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return BearerToken(
            kind: kind,
            selector: Hex.encode(selectorBytes),
            secret: Base64URL.encode(Data(secretBytes))
        )
    }

    /// Parses a presented token; nil when it is not shaped like one.
    public init?(parsing string: String, kind: String = prefix) {
        guard string.hasPrefix(kind), string.utf8.count < 200 else { return nil }
        let body = string.dropFirst(kind.count)
        guard let underscore = body.firstIndex(of: "_") else { return nil }
        let selector = String(body[..<underscore])
        let secret = String(body[body.index(after: underscore)...])
        guard selector.count == 16, selector.allSatisfy({ $0.isHexDigit && !$0.isUppercase }), !secret.isEmpty else { return nil }
        self.init(kind: kind, selector: selector, secret: secret)
    }

    init(kind: String, selector: String, secret: String) {
        self.kind = kind
        self.selector = selector
        self.secret = secret
    }

    static func hash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(secret.utf8)))
    }

    /// Compares two hashes in time that does not depend on where they differ.
    public static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
