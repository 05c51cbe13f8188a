import Foundation
import JWTKit

/// A provider's public keys (a JWKS, RFC 7517), by `kid`, each with the
/// one algorithm it verifies. Keys Canopy does not verify with (an
/// encryption key, a type other than RSA and EC P-256) are skipped; a set
/// with no usable key, a private key or a malformed key is refused whole.
public struct KeySet: Sendable {
    /// One verification key: its algorithm is fixed by the key itself
    /// (`alg` when the JWK gives one, else RS256 for RSA and ES256 for EC),
    /// so a token's `alg` header can only select it, never change it.
    public struct Key: Sendable {
        public let kid: String?
        public let algorithm: String
        let jwk: JWK
    }

    public let keys: [Key]
    /// Keys present but not usable, with why (for the log).
    public let skipped: [String]

    /// Parses a JWKS document. Throws a configuration error naming the key.
    public init(parsing data: Data) throws(IdentityError) {
        func fault(_ message: String) -> IdentityError { IdentityError(.configuration, message) }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw fault(#"not a JWKS: expected a JSON object {"keys": [...]}"#)
        }
        guard let list = object["keys"] as? [[String: Any]] else {
            throw fault(#"not a JWKS: "keys" must be an array of keys"#)
        }
        var keys: [Key] = []
        var skipped: [String] = []
        for (index, entry) in list.enumerated() {
            let kid = entry["kid"] as? String
            let label = kid.map { "key \(quoted($0))" } ?? "keys[\(index)]"
            let type = entry["kty"] as? String ?? ""
            // Before anything is skipped: a set that holds private or secret
            // material is refused whole, whatever the key is for.
            if ["d", "k", "p", "q", "dp", "dq", "qi"].contains(where: { entry[$0] != nil }) {
                throw fault("\(label) is a private or secret key; a key set must hold public keys only")
            }
            if let use = entry["use"] as? String, use != "sig" {
                skipped.append("\(label): use \(quoted(use)) is not for signatures")
                continue
            }
            let algorithm: String
            switch (type, entry["alg"] as? String, entry["crv"] as? String) {
            case ("RSA", nil, _), ("RSA", "RS256"?, _): algorithm = "RS256"
            case ("EC", nil, "P-256"?), ("EC", "ES256"?, "P-256"?): algorithm = "ES256"
            case (_, let alg, let curve):
                skipped.append("\(label): \(type.isEmpty ? "no kty" : "kty \(quoted(type))")\(alg.map { " alg \(quoted($0))" } ?? "")\(curve.map { " crv \(quoted($0))" } ?? "") is not RS256 or ES256")
                continue
            }
            if keys.contains(where: { $0.kid == kid }) {
                throw fault("\(label) appears twice")
            }
            let jwk: JWK
            do {
                var fields = entry
                fields["alg"] = algorithm
                fields["kid"] = kid ?? "canopy-only-key"
                jwk = try JSONDecoder().decode(JWK.self, from: JSONSerialization.data(withJSONObject: fields))
                try Self.checkMaterial(jwk, algorithm: algorithm)
            } catch {
                throw fault("\(label) is not a valid \(algorithm) public key (\(error))")
            }
            keys.append(Key(kid: kid, algorithm: algorithm, jwk: jwk))
        }
        guard !keys.isEmpty else {
            throw fault("no usable key (RS256 or ES256)\(skipped.isEmpty ? "" : ": " + skipped.joined(separator: "; "))")
        }
        if keys.count > 1, keys.contains(where: { $0.kid == nil }) {
            throw fault("with more than one key, every key needs a kid")
        }
        self.keys = keys
        self.skipped = skipped
    }

    /// The key a token's `kid` selects: by kid, or the only key of a set
    /// whose one key has none.
    func key(for kid: String?) -> Key? {
        if let kid { return keys.first { $0.kid == kid } }
        return keys.count == 1 ? keys[0] : nil
    }

    /// Builds the key as jwt-kit does when verifying, so bad material is
    /// found when the set is read, not at the first token.
    private static func checkMaterial(_ jwk: JWK, algorithm: String) throws {
        switch algorithm {
        case "RS256":
            guard let modulus = jwk.modulus, let exponent = jwk.exponent else { throw IdentityError(.configuration, "n and e are required") }
            _ = try Insecure.RSA.PublicKey(modulus: modulus, exponent: exponent)
        default:
            guard let x = jwk.x, let y = jwk.y else { throw IdentityError(.configuration, "x and y are required") }
            _ = try ES256PublicKey(parameters: (x, y))
        }
    }
}
