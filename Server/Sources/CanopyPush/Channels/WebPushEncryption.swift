import Crypto
import Foundation

/// RFC 8291's message encryption for Web Push (`aes128gcm`, RFC 8188), from
/// swift-crypto's primitives: ECDH on P-256 with the browser's key, HKDF
/// keyed by its auth secret, one AES-128-GCM record. There is no maintained
/// Swift Web Push library among this project's packages; this is the RFC's
/// half page, checked by an independent decryptor (Python's http_ece) in
/// the tests.
enum WebPushEncryption {
    /// The body to POST: the header (salt, record size, our public key)
    /// followed by the sealed record.
    static func encrypt(
        _ plaintext: [UInt8], receiverKey: [UInt8], authSecret: [UInt8],
        senderKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
        salt: [UInt8] = Array(SymmetricKey(size: .init(bitCount: 128)).withUnsafeBytes { Array($0) })
    ) throws -> [UInt8] {
        let receiver = try P256.KeyAgreement.PublicKey(x963Representation: receiverKey)
        let senderPublic = Array(senderKey.publicKey.x963Representation)
        let shared = try senderKey.sharedSecretFromKeyAgreement(with: receiver)
        // IKM = HKDF(auth, ecdh, "WebPush: info" || 0 || ua_public || as_public, 32)
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiverKey + senderPublic
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: authSecret, sharedInfo: keyInfo, outputByteCount: 32)
        let cek = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        // One record, the last: the content and the 0x02 delimiter, no padding.
        let sealed = try AES.GCM.seal(
            plaintext + [2], using: cek, nonce: try AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }))
        let recordSize: UInt32 = 4096
        var body = salt
        body += withUnsafeBytes(of: recordSize.bigEndian) { Array($0) }
        body.append(UInt8(senderPublic.count))
        body += senderPublic
        body += Array(sealed.ciphertext) + Array(sealed.tag)
        return body
    }
}
