import CanopyIdentity
import Crypto
import Foundation

/// Web Services' server-to-server signatures (docs/WEB_SERVICES.md). The
/// input is `DATE\nSIGNATURE\nPATH\nBODY`: the headers' values read, the
/// signature checked against a fixed key; and, whenever the date reads,
/// the fixed key's own signature over the same request must verify, and
/// stop verifying when one byte of the body or the path changes.
struct ServerSignatureTarget: FuzzTarget {
    static let name = "server-signature"

    static let key = try! P256.Signing.PrivateKey(rawRepresentation: Data(repeating: 7, count: 32))

    func run(_ bytes: UnsafeRawBufferPointer) {
        let parts = Array(bytes).split(separator: UInt8(ascii: "\n"), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4 else { return }
        let date = String(decoding: parts[0], as: UTF8.self), signatureText = String(decoding: parts[1], as: UTF8.self)
        let path = String(decoding: parts[2], as: UTF8.self), body = Array(parts[3])
        let publicKey = Self.key.publicKey.x963Representation
        if let presented = try? ServerKeySignature(keyID: "k", date: date, signature: signatureText) {
            _ = body.withUnsafeBytes { presented.verifies(publicKey: publicKey, body: $0, path: path) }
            _ = presented.isFresh(now: Date())
        }
        guard let encoded = try? ServerKeySignature(keyID: "k", date: date, signature: "AA==") else { return }
        let message = body.withUnsafeBytes { ServerKeySignature.message(date: encoded.dateText, body: $0, path: path) }
        let signed = try! Self.key.signature(for: message).derRepresentation.base64EncodedString()
        let good = try! ServerKeySignature(keyID: "k", date: date, signature: signed)
        require(body.withUnsafeBytes { good.verifies(publicKey: publicKey, body: $0, path: path) }, "the key's own signature does not verify")
        var changed = body
        if changed.isEmpty { changed = [0] } else { changed[changed.count / 2] ^= 1 }
        require(!changed.withUnsafeBytes { good.verifies(publicKey: publicKey, body: $0, path: path) }, "a changed body still verifies")
        require(!body.withUnsafeBytes { good.verifies(publicKey: publicKey, body: $0, path: path + "x") }, "a changed path still verifies")
        // Issue 48: the four spellings of one signature (DER and raw, s and
        // n−s) verify, and all are one use, the replay record's key.
        let raw = try! P256.Signing.ECDSASignature(derRepresentation: Data(base64Encoded: signed)!).rawRepresentation
        let twin = ServerKeySignature.malleableTwin(raw)
        var uses: Set<Data> = []
        for spelling in [raw, twin, try! P256.Signing.ECDSASignature(rawRepresentation: twin).derRepresentation,
                         try! P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation] {
            let presented = try! ServerKeySignature(keyID: "k", date: date, signature: spelling.base64EncodedString())
            let use = body.withUnsafeBytes { presented.verifiedUse(publicKey: publicKey, body: $0, path: path) }
            require(use != nil, "a spelling of the key's own signature does not verify")
            if let use { uses.insert(use) }
        }
        require(uses.count == 1, "one signature's spellings are \(uses.count) uses")
    }
}
