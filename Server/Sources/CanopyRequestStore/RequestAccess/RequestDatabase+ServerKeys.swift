import Crypto
import Foundation
import Logging
import PostgresNIO

/// A live server-to-server key, as the gateway verifies a request with it.
public struct ServerKey: Sendable {
    public var container: String
    /// Whom its requests act as.
    public var userID: Int64
    /// The ECDSA P-256 public key, uncompressed (X9.63).
    public var publicKey: Data
    /// The databases it may reach (`public`, and what the operator granted).
    public var databases: Set<String>
}

extension RequestDatabase {
    /// The live key with identifier `keyID`, or nil. Remembered as long as
    /// a token is, so a revoked key stops working within that time.
    public func serverKey(_ keyID: String, logger: Logger) async throws -> ServerKey? {
        guard keyID.utf8.count == 64, keyID.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return nil }
        if let cached = serverKeys.value(for: keyID) { return cached }
        let rows = try await primary.withConnection { connection in
            try await connection.query(
                "SELECT container, user_id, public_key, databases FROM canopy.server_key(\(keyID)) WHERE container IS NOT NULL",
                logger: logger
            ).collect()
        }
        guard let (container, userID, publicKey, databases) = try rows.first?.decode((String, Int64, Data, [String]).self) else { return nil }
        let key = ServerKey(container: container, userID: userID, publicKey: publicKey, databases: Set(databases))
        serverKeys.store(key, for: keyID)
        return key
    }

    /// Notes a signature's use: false when it was used before (a replay).
    /// `signature` is its one spelling (`ServerKeySignature.verifiedUse`),
    /// so DER, raw and the malleable `(r, n−s)` twins are one use.
    /// `oldest` is the earliest date still accepted; older notes are purged.
    public func noteServerSignature(_ signature: Data, signedAt: Date, oldest: Date, logger: Logger) async throws -> Bool {
        let hash = Data(SHA256.hash(data: signature))
        let rows = try await primary.withConnection { connection in
            try await connection.query("SELECT canopy.note_server_signature(\(hash), \(signedAt), \(oldest))", logger: logger).collect()
        }
        return try rows.first?.decode(Bool.self) ?? false
    }
}
