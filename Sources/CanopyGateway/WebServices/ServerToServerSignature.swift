import CanopyRequestStore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// A server-to-server request's signature, as the reference specifies it:
/// `X-Apple-CloudKit-Request-KeyID`, `X-Apple-CloudKit-Request-ISO8601Date`
/// (without milliseconds) and `X-Apple-CloudKit-Request-SignatureV1`, the
/// base64 of an ECDSA P-256 signature (SHA-256; DER, as openssl and every
/// client library make it, or the raw 64 bytes) over
/// `[date]:[base64 of the body's SHA-256]:[the URL's path, no query]`.
/// A date more than ``window`` away from now is refused, and so is a
/// signature used before (``RequestDatabase/noteServerSignature``).
struct ServerToServerSignature {
    static let keyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let dateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!

    /// How far a signature's date may be from the server's clock, either way.
    static let window: TimeInterval = 300

    var keyID: String
    var date: Date
    var dateText: String
    var signature: Data

    /// The three headers read, or nil when the request has none of them
    /// (it is not a server-to-server request); a request with some but not
    /// all, or with one that cannot be read, is refused with why.
    init?(_ headers: HTTPFields) throws(APIError) {
        let keyID = headers[Self.keyIDHeader], dateText = headers[Self.dateHeader], signatureText = headers[Self.signatureHeader]
        if keyID == nil && dateText == nil && signatureText == nil { return nil }
        guard let keyID, let dateText, let signatureText else {
            throw APIError(.notAuthenticated, "a server-to-server request needs all three headers: X-Apple-CloudKit-Request-KeyID, -ISO8601Date and -SignatureV1", status: .unauthorized)
        }
        guard let date = Self.parseDate(dateText) else {
            throw APIError(.notAuthenticated, "X-Apple-CloudKit-Request-ISO8601Date must be an ISO 8601 date in UTC without milliseconds, as 2016-01-25T22:15:43Z", status: .unauthorized)
        }
        guard let signature = Data(base64Encoded: signatureText) else {
            throw APIError(.notAuthenticated, "X-Apple-CloudKit-Request-SignatureV1 must be base64", status: .unauthorized)
        }
        self.keyID = keyID
        self.date = date
        self.dateText = dateText
        self.signature = signature
    }

    static func parseDate(_ text: String) -> Date? {
        try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false, timeZone: .gmt))
    }

    /// The message the reference signs.
    static func message(date: String, body: ByteBuffer, path: String) -> Data {
        let digest = body.withUnsafeReadableBytes { SHA256.hash(data: $0) }
        return Data("\(date):\(Data(digest).base64EncodedString()):\(path)".utf8)
    }

    /// Whether the signature is the key's over this request.
    func verifies(with key: ServerKey, body: ByteBuffer, path: String) -> Bool {
        guard let publicKey = try? P256.Signing.PublicKey(x963Representation: key.publicKey) else { return false }
        let message = Self.message(date: dateText, body: body, path: path)
        if let der = try? P256.Signing.ECDSASignature(derRepresentation: signature), publicKey.isValidSignature(der, for: message) {
            return true
        }
        if let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signature), publicKey.isValidSignature(raw, for: message) {
            return true
        }
        return false
    }

    /// The date is within the window of `now`.
    func isFresh(now: Date) -> Bool {
        abs(date.timeIntervalSince(now)) <= Self.window
    }
}
