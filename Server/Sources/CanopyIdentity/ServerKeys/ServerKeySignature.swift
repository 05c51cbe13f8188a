import Crypto
import Foundation

/// A CloudKit Web Services server-to-server signature, as the reference
/// specifies it: the base64 of an ECDSA P-256 (SHA-256) signature over
/// `[date]:[base64 of the body's SHA-256]:[the URL's path]`, the date in
/// ISO 8601 without milliseconds (`2016-01-25T22:15:43Z`). DER, as openssl
/// and client libraries make it, or the raw 64 bytes. The gateway reads
/// the three headers into this, then checks the date's freshness, the
/// signature and its first use (docs/WEB_SERVICES.md).
public struct ServerKeySignature: Sendable {
    /// How far a signature's date may be from the server's clock, either way.
    public static let window: TimeInterval = 300

    public let keyID: String
    public let date: Date
    public let dateText: String
    public let signature: Data

    /// The headers' values read; refused (`IdentityError.refused`, naming
    /// which) when the date or the signature cannot be read.
    public init(keyID: String, date dateText: String, signature signatureText: String) throws(IdentityError) {
        guard let date = Self.parseDate(dateText) else {
            throw .refused("X-Apple-CloudKit-Request-ISO8601Date must be an ISO 8601 date in UTC without milliseconds, as 2016-01-25T22:15:43Z")
        }
        guard let signature = Data(base64Encoded: signatureText), !signature.isEmpty else {
            throw .refused("X-Apple-CloudKit-Request-SignatureV1 must be base64")
        }
        self.keyID = keyID
        self.date = date
        self.dateText = dateText
        self.signature = signature
    }

    static func parseDate(_ text: String) -> Date? {
        guard text.utf8.count == 20 else { return nil }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false, timeZone: .gmt))
    }

    /// The message the reference signs.
    public static func message(date: String, body: UnsafeRawBufferPointer, path: String) -> Data {
        let digest = Data(SHA256.hash(data: body)).base64EncodedString()
        return Data("\(date):\(digest):\(path)".utf8)
    }

    /// Whether this is the signature of `publicKey` (X9.63) over the request.
    public func verifies(publicKey x963: Data, body: UnsafeRawBufferPointer, path: String) -> Bool {
        verifiedUse(publicKey: x963, body: body, path: path) != nil
    }

    /// The signature's one use, when it is `publicKey`'s over the request:
    /// the raw `r||s` with `s` in the lower half of the group order. ECDSA
    /// signatures are malleable (`(r, n−s)` verifies as `(r, s)` does) and
    /// the headers take DER or raw bytes, so one signature can be sent in
    /// four spellings; all four give these same 64 bytes, which the replay
    /// record is keyed on (docs/SECURITY.md, "Replayed signatures").
    public func verifiedUse(publicKey x963: Data, body: UnsafeRawBufferPointer, path: String) -> Data? {
        guard let publicKey = try? P256.Signing.PublicKey(x963Representation: x963) else { return nil }
        let message = Self.message(date: dateText, body: body, path: path)
        if let der = try? P256.Signing.ECDSASignature(derRepresentation: signature), publicKey.isValidSignature(der, for: message) {
            return Self.lowS(der.rawRepresentation)
        }
        if signature.count == 64, let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
           publicKey.isValidSignature(raw, for: message) {
            return Self.lowS(raw.rawRepresentation)
        }
        return nil
    }

    /// P-256's group order n, big-endian.
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]
    /// ⌊n / 2⌋: an `s` above it is the high twin of `n − s`.
    static let halfOrder: [UInt8] = [
        0x7F, 0xFF, 0xFF, 0xFF, 0x80, 0x00, 0x00, 0x00, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xDE, 0x73, 0x7D, 0x56, 0xD3, 0x8B, 0xCF, 0x42, 0x79, 0xDC, 0xE5, 0x61, 0x7E, 0x31, 0x92, 0xA8,
    ]

    /// `r||s` (64 bytes) with `s` replaced by `n − s` when `s > n/2`.
    public static func lowS(_ raw: Data) -> Data {
        guard raw.count == 64 else { return raw }
        let s = [UInt8](raw.suffix(32))
        return s.lexicographicallyPrecedes(halfOrder) || s == halfOrder ? raw : malleableTwin(raw)
    }

    /// `r||(n − s)`: the other signature that verifies wherever `r||s` does.
    public static func malleableTwin(_ raw: Data) -> Data {
        let bytes = [UInt8](raw)
        guard bytes.count == 64 else { return raw }
        var difference = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var digit = Int(order[index]) - Int(bytes[32 + index]) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            difference[index] = UInt8(digit)
        }
        return Data(bytes[..<32] + difference)
    }

    /// The date is within ``window`` of `now`.
    public func isFresh(now: Date) -> Bool {
        abs(date.timeIntervalSince(now)) <= Self.window
    }
}
