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
        let payload = Self.base64URL(Data(JSONValue.object(["q": .string(fingerprint), "k": .array(keys)]).jsonText.utf8))
        let signature = Self.base64URL(Data(HMAC<SHA256>.authenticationCode(for: Data(payload.utf8), using: secret.symmetricKey)))
        return "\(payload).\(signature)"
    }

    /// Decodes and verifies; nil for anything not signed by this server or
    /// not made for this query.
    public static func decode(_ text: String, secret: SigningKey, fingerprint: String) -> Cursor? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let signature = data(fromBase64URL: String(parts[1])),
              HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: Data(parts[0].utf8), using: secret.symmetricKey),
              let json = data(fromBase64URL: String(parts[0])),
              case .object(let payload)? = try? json.withUnsafeBytes({ bytes throws(QueryError) in try JSONValue(parsing: bytes) }),
              case .string(fingerprint)? = payload["q"], case .array(let keys)? = payload["k"]
        else { return nil }
        return Cursor(fingerprint: fingerprint, keys: keys)
    }

    /// Base64url without padding, byte by byte: it runs for every page, and
    /// Foundation's `replacingOccurrences` cost 5% of a W2 request (issue 18).
    static func base64URL(_ data: Data) -> String {
        var bytes = Array(data.base64EncodedString().utf8)
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "+"): bytes[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): bytes[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func data(fromBase64URL text: String) -> Data? {
        var bytes = Array(text.utf8)
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "-"): bytes[index] = UInt8(ascii: "+")
            case UInt8(ascii: "_"): bytes[index] = UInt8(ascii: "/")
            default: break
            }
        }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(bytes))
    }

    /// Lower-case hex, without `String(format:)` (2% of a W2 request).
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// A stable digest of what defines a query's order and rows.
    public static func fingerprint(_ parts: [String]) -> String {
        hex(SHA256.hash(data: Data(parts.joined(separator: "\u{1F}").utf8)).prefix(12))
    }
}
