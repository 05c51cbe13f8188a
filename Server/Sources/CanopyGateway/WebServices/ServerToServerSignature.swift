import CanopyIdentity
import HTTPTypes

/// The three server-to-server headers of a Web Services request, read into
/// a ``ServerKeySignature`` (the signature's rules live there, in
/// CanopyIdentity): nil for a request that has none of them; refused with
/// why for one that has some but not all, or one that cannot be read.
enum ServerToServerSignature {
    static let keyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let dateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!

    static func read(_ headers: HTTPFields) throws -> ServerKeySignature? {
        let keyID = headers[keyIDHeader], date = headers[dateHeader], signature = headers[signatureHeader]
        if keyID == nil && date == nil && signature == nil { return nil }
        guard let keyID, let date, let signature else {
            throw APIError(.notAuthenticated, "a server-to-server request needs all three headers: X-Apple-CloudKit-Request-KeyID, -ISO8601Date and -SignatureV1", status: .unauthorized)
        }
        do {
            return try ServerKeySignature(keyID: keyID, date: date, signature: signature)
        } catch {
            throw APIError(.notAuthenticated, error.message, status: .unauthorized)
        }
    }
}
