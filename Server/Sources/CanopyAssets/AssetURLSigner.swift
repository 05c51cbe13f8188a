import CanopyEncoding
import Crypto
import Foundation

/// Signed, expiring download URLs (docs/API.md §11): `<public URL>/assets/<sha256>
/// ?type=<content type>&expires=<unix seconds>&signature=<hex>`, the
/// signature an HMAC-SHA256, with the server secret `asset-url`, of the
/// digest, content type and expiry. Whoever may read a record gets its URLs;
/// the URL alone then fetches the bytes (an `<img src>` sends no token).
public struct AssetURLSigner: Sendable {
    let key: SymmetricKey
    /// Keys rotated out but inside their overlap window (`canopy secrets
    /// rotate asset-url`): URLs they signed still verify.
    let acceptedKeys: [SymmetricKey]
    let publicURL: String
    let lifetime: TimeInterval

    public init(key: SymmetricKey, acceptedKeys: [SymmetricKey] = [], publicURL: String, lifetime: TimeInterval) {
        self.key = key
        self.acceptedKeys = acceptedKeys
        self.publicURL = publicURL
        self.lifetime = lifetime
    }

    public func signature(sha256: String, contentType: String, expires: Int64) -> String {
        signature(sha256: sha256, contentType: contentType, expires: expires, key: key)
    }

    private func signature(sha256: String, contentType: String, expires: Int64, key: SymmetricKey) -> String {
        let message = Data("\(sha256)\n\(contentType)\n\(expires)".utf8)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return Hex.encode(code)
    }

    public func url(sha256: String, contentType: String, now: Date = Date()) -> String {
        let expires = Int64(now.timeIntervalSince1970 + lifetime)
        var components = URLComponents()
        components.queryItems = [
            URLQueryItem(name: "type", value: contentType),
            URLQueryItem(name: "expires", value: String(expires)),
            URLQueryItem(name: "signature", value: signature(sha256: sha256, contentType: contentType, expires: expires)),
        ]
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return "\(publicURL)/assets/\(sha256)?\(query)"
    }

    /// A CloudKit Web Services upload URL's signature (`assets/upload`):
    /// who may post bytes to it, until when. Its message starts with
    /// `upload`, so no download signature can stand for one.
    public func uploadSignature(user: Int64, expires: Int64) -> String {
        uploadSignature(user: user, expires: expires, key: key)
    }

    private func uploadSignature(user: Int64, expires: Int64, key: SymmetricKey) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: Data("upload\n\(user)\n\(expires)".utf8), using: key))
    }

    /// Whether an upload URL's parameters are valid and unexpired.
    public func verifyUpload(user: Int64, expires: Int64, signature given: String, now: Date = Date()) -> Bool {
        guard Double(expires) > now.timeIntervalSince1970 else { return false }
        let actual = Array(given.utf8)
        return ([key] + acceptedKeys).contains { key in
            let expected = Array(uploadSignature(user: user, expires: expires, key: key).utf8)
            guard expected.count == actual.count else { return false }
            return zip(expected, actual).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }

    /// Whether a request's parameters are a valid, unexpired signature for `sha256`.
    public func verify(sha256: String, contentType: String, expires: Int64, signature given: String, now: Date = Date()) -> Bool {
        guard Double(expires) > now.timeIntervalSince1970 else { return false }
        let actual = Array(given.utf8)
        return ([key] + acceptedKeys).contains { key in
            let expected = Array(signature(sha256: sha256, contentType: contentType, expires: expires, key: key).utf8)
            guard expected.count == actual.count else { return false }
            return zip(expected, actual).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }
}
