import CanopyEncoding
import Crypto
import Foundation

/// A secret credential Canopy issues: a public selector that finds the
/// row, and a secret that proves possession. Only SHA-256(secret) is ever
/// stored; the token itself exists only in the answer that issued it.
///
/// Three forms (``Form``), because CloudKit clients check a credential's
/// shape before they send it (docs/WEB_SERVICES.md, "Credentials"):
/// - `cnp_<selector>_<secret>`: a person's Canopy token (`Authorization: Bearer`);
/// - 64 lowercase hex digits: a container's API token (`ckAPIToken`), as
///   Apple's are; the selector is its first 16 digits;
/// - 128 characters of `[A-Za-z0-9]`: a person's token in the shape of a
///   CloudKit web auth token (`ckWebAuthToken`); the selector is its first
///   16 characters (hex), the secret the other 112.
///
/// API tokens issued before issue 49 (`cka_<selector>_<secret>`) are read
/// still (``Form/legacyAPI``).
public struct BearerToken: Sendable {
    /// How a token is written.
    public enum Form: Sendable, Equatable {
        /// `cnp_<16 hex>_<43 base64url>`: a person's Canopy token.
        case canopy
        /// `<16 hex><48 hex>`: a container's API token.
        case api
        /// `<16 hex><112 alphanumerics>`: a person's web auth token.
        case webAuth
        /// `cka_<16 hex>_<43 base64url>`: an API token from before issue 49.
        case legacyAPI
    }

    public static let prefix = "cnp_"
    /// The prefix of API tokens issued before issue 49.
    public static let containerPrefix = "cka_"
    /// An API token's length: 32 bytes in hex, as Apple's.
    public static let apiTokenLength = 64
    /// A web auth token's length (CloudKit clients want 100 or more).
    public static let webAuthTokenLength = 128

    public let form: Form
    /// 8 random bytes, hex: public, indexes the token's row.
    public let selector: String
    /// The rest: the secret.
    public let secret: String

    public var string: String {
        switch form {
        case .canopy: "\(Self.prefix)\(selector)_\(secret)"
        case .legacyAPI: "\(Self.containerPrefix)\(selector)_\(secret)"
        case .api, .webAuth: selector + secret
        }
    }

    /// What names the token in lists and revocations: `cnp_<selector>` for
    /// a person's token in either form (one row, one prefix), the selector
    /// alone for an API token (the token's first 16 characters).
    public var publicPrefix: String {
        switch form {
        case .canopy, .webAuth: Self.prefix + selector
        case .legacyAPI: Self.containerPrefix + selector
        case .api: selector
        }
    }

    public var secretHash: [UInt8] { Self.hash(secret) }

    /// A fresh token from the system's secure random source.
    public static func generate(_ form: Form = .canopy) -> BearerToken {
        var generator = SystemRandomNumberGenerator()
        func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) } }
        let selector = Hex.encode(bytes(8))
        switch form {
        case .canopy, .legacyAPI:
            return BearerToken(form: form, selector: selector, secret: Base64URL.encode(Data(bytes(32))))
        case .api:
            return BearerToken(form: .api, selector: selector, secret: Hex.encode(bytes(24)))
        case .webAuth:
            // 112 characters drawn evenly from 62 (rejection sampling): 666 bits.
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
            var secret: [UInt8] = []
            secret.reserveCapacity(webAuthTokenLength - 16)
            while secret.count < webAuthTokenLength - 16 {
                let byte = UInt8.random(in: .min ... .max, using: &generator)
                if byte < 248 { secret.append(alphabet[Int(byte % 62)]) }
            }
            return BearerToken(form: .webAuth, selector: selector, secret: String(decoding: secret, as: UTF8.self))
        }
    }

    /// Parses a presented person's token, in either of its forms (`cnp_…`
    /// or a web auth token); nil when it is shaped like neither.
    public init?(parsingPersonal string: String) {
        if let token = BearerToken(parsing: string, as: .canopy) ?? BearerToken(parsing: string, as: .webAuth) {
            self = token
        } else {
            return nil
        }
    }

    /// Parses a presented API token, new or old; nil when it is shaped like neither.
    public init?(parsingAPI string: String) {
        if let token = BearerToken(parsing: string, as: .api) ?? BearerToken(parsing: string, as: .legacyAPI) {
            self = token
        } else {
            return nil
        }
    }

    /// Parses a token written in `form`; nil when it is not shaped like one.
    public init?(parsing string: String, as form: Form) {
        let utf8 = string.utf8
        switch form {
        case .canopy, .legacyAPI:
            let kind = form == .canopy ? Self.prefix : Self.containerPrefix
            guard string.hasPrefix(kind), utf8.count < 200 else { return nil }
            let body = string.dropFirst(kind.count)
            guard let underscore = body.firstIndex(of: "_") else { return nil }
            let selector = String(body[..<underscore])
            let secret = String(body[body.index(after: underscore)...])
            guard Self.isSelector(selector), !secret.isEmpty else { return nil }
            self.init(form: form, selector: selector, secret: secret)
        case .api:
            guard utf8.count == Self.apiTokenLength, utf8.allSatisfy(Self.isLowerHex) else { return nil }
            self.init(form: .api, selector: String(string.prefix(16)), secret: String(string.dropFirst(16)))
        case .webAuth:
            guard utf8.count == Self.webAuthTokenLength, utf8.prefix(16).allSatisfy(Self.isLowerHex),
                  utf8.allSatisfy(Self.isAlphanumeric) else { return nil }
            self.init(form: .webAuth, selector: String(string.prefix(16)), secret: String(string.dropFirst(16)))
        }
    }

    init(form: Form, selector: String, secret: String) {
        self.form = form
        self.selector = selector
        self.secret = secret
    }

    /// 16 lowercase hex digits.
    public static func isSelector(_ string: some StringProtocol) -> Bool {
        string.utf8.count == 16 && string.utf8.allSatisfy(isLowerHex)
    }

    static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
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
