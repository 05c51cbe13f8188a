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
        guard let publicKey = try? P256.Signing.PublicKey(x963Representation: x963) else { return false }
        let message = Self.message(date: dateText, body: body, path: path)
        if let der = try? P256.Signing.ECDSASignature(derRepresentation: signature), publicKey.isValidSignature(der, for: message) {
            return true
        }
        if signature.count == 64, let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
           publicKey.isValidSignature(raw, for: message) {
            return true
        }
        return false
    }

    /// The date is within ``window`` of `now`.
    public func isFresh(now: Date) -> Bool {
        abs(date.timeIntervalSince(now)) <= Self.window
    }
}
