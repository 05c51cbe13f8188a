import CanopyEncoding
import Foundation

/// A compact JWS split into its parts, header and claims decoded but
/// nothing trusted yet: the claims only pick the provider (`iss`) and the
/// header the key (`kid`, `alg`).
struct UnverifiedToken {
    let header: [String: Any]
    let claims: [String: Any]

    init(_ token: String) throws(IdentityError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .refused("the bearer token is not a JWT (a JWT has three dot-separated parts)")
        }
        guard let header = Self.object(parts[0]) else { throw .refused("the JWT's header is not base64url-encoded JSON") }
        guard let claims = Self.object(parts[1]) else { throw .refused("the JWT's payload is not base64url-encoded JSON") }
        self.header = header
        self.claims = claims
    }

    var algorithm: String? { header["alg"] as? String }
    var kid: String? { header["kid"] as? String }

    /// A string claim, or nil when absent or of another type.
    func string(_ name: String) -> String? { claims[name] as? String }

    /// A NumericDate claim (seconds since 1970), or nil.
    func date(_ name: String) -> Date? {
        guard let number = claims[name] as? NSNumber else { return nil }
        return Date(timeIntervalSince1970: number.doubleValue)
    }

    /// `aud`: one string or an array of strings.
    var audiences: [String] {
        if let one = claims["aud"] as? String { return [one] }
        return (claims["aud"] as? [Any])?.compactMap { $0 as? String } ?? []
    }

    /// A boolean claim; Sign in with Apple sends some as the strings
    /// `"true"` / `"false"`. A claim that is JSON `true`, or Apple's string `"true"`; a number
    /// is not a flag (issue 64: `email_verified: 1` once counted as
    /// verified, as Foundation reads a JSON 1 as an NSNumber that casts to
    /// `true`).
    func flag(_ name: String) -> Bool {
        switch claims[name] {
        case let value as NSNumber where String(cString: value.objCType) == "c": value.boolValue
        case let value as String: value.lowercased() == "true"
        default: false
        }
    }

    private static func object(_ part: Substring) -> [String: Any]? {
        guard let data = Base64URL.decode(part) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}
