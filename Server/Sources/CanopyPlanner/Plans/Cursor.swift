import CanopyEncoding
import Crypto
import Foundation

/// An opaque keyset cursor: where the last page ended (its sort values and
/// recordName) and a fingerprint of the query it belongs to, signed with
/// the server's secret so a forged or edited cursor is refused.
public struct Cursor: Sendable, Equatable {
    public var fingerprint: String
    public var keys: [JSONValue]

    public init(fingerprint: String, keys: [JSONValue]) {
        self.fingerprint = fingerprint
        self.keys = keys
    }

    public func encoded(secret: SigningKey) -> String {
        let payload = Base64URL.encode(Data(JSONValue.object(["q": .string(fingerprint), "k": .array(keys)]).jsonText.utf8))
        let signature = Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Data(payload.utf8), using: secret.symmetricKey)))
        return "\(payload).\(signature)"
    }

    /// Decodes and verifies; nil for anything not signed by this server or
    /// not made for this query.
    public static func decode(_ text: String, secret: SigningKey, fingerprint: String) -> Cursor? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let signature = Base64URL.decode(parts[1]),
              secret.verifyingKeys.contains(where: { HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: Data(parts[0].utf8), using: $0) }),
              let json = Base64URL.decode(parts[0]),
              case .object(let payload)? = try? json.withUnsafeBytes({ bytes throws(QueryError) in try JSONValue(parsing: bytes) }),
              case .string(fingerprint)? = payload["q"], case .array(let keys)? = payload["k"]
        else { return nil }
        return Cursor(fingerprint: fingerprint, keys: keys)
    }

    /// A stable digest of what defines a query's order and rows.
    public static func fingerprint(_ parts: [String]) -> String {
        Hex.encode(SHA256.hash(data: Data(parts.joined(separator: "\u{1F}").utf8)).prefix(12))
    }
}
