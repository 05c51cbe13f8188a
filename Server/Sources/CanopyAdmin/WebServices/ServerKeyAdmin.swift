import CanopyEncoding
import CanopyRequestStore
import Crypto
import Foundation
import Logging
import PostgresNIO

/// A server-to-server key as `canopy keys list` shows it.
public struct ServerKeySummary: Sendable, Codable, Equatable {
    /// What requests send as X-Apple-CloudKit-Request-KeyID.
    public var keyID: String
    public var container: String
    /// The user its requests act as (name).
    public var user: String
    public var databases: [String]
    public var name: String
    public var created: Date
    public var revoked: Date?
}

/// CloudKit Web Services' server-to-server keys for `canopy keys`: a
/// public key registered for a container, acting as one user in the
/// databases the operator names (`public` unless more is given: CloudKit
/// allows only the public database; Canopy lets the operator grant the
/// user's own private and shared databases, docs/WEB_SERVICES.md).
public struct ServerKeyAdmin: Sendable {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// Reads a PEM public key (`openssl ec -in key.pem -pubout`), an
    /// ECDSA P-256 key, as its X9.63 bytes.
    public static func publicKey(pem: String) throws -> Data {
        do {
            return try P256.Signing.PublicKey(pemRepresentation: pem).x963Representation
        } catch {
            throw StoreError(.invalidInput, "the file is not an ECDSA P-256 public key in PEM (make one with openssl ecparam -name prime256v1 -genkey -noout -out key.pem; openssl ec -in key.pem -pubout -out public.pem)")
        }
    }

    /// Registers `publicKey` for `container`, acting as the user
    /// `nameOrRecordName` in `databases`; returns the new key's summary.
    public func add(
        publicKey: Data, container: String, user nameOrRecordName: String, databases: [String], name: String, connection: PostgresConnection
    ) async throws -> ServerKeySummary {
        guard ContainerIdentifier.isValid(container) else {
            throw StoreError(.invalidInput, "'\(container.prefix(80))' is not a container identifier: letters, digits, '.', '-' and '_', starting with a letter or digit, as iCloud.com.example.app")
        }
        let databases = databases.isEmpty ? ["public"] : Array(Set(databases)).sorted()
        for database in databases where !["public", "private", "shared"].contains(database) {
            throw StoreError(.invalidInput, "--database must be public, private or shared, not '\(database.prefix(40))'")
        }
        guard !name.isEmpty, name.utf8.count <= 255 else { throw StoreError(.invalidInput, "a key's name must be 1-255 bytes") }
        let user = try await UserAdmin(logger: logger).find(nameOrRecordName, connection: connection)
        var generator = SystemRandomNumberGenerator()
        let keyID = Hex.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let rows = try await connection.query(
            """
            INSERT INTO canopy.server_keys (key_id, container, user_id, public_key, databases, name)
            VALUES (\(keyID), \(container), \(user.id), \(publicKey), \(databases), \(name))
            RETURNING created_at
            """,
            logger: logger
        )
        var created = Date()
        for try await at in rows.decode(Date.self) { created = at }
        return ServerKeySummary(keyID: keyID, container: container, user: user.name, databases: databases, name: name, created: created)
    }

    /// Every key, oldest first, revoked ones included.
    public func list(connection: PostgresConnection) async throws -> [ServerKeySummary] {
        let rows = try await connection.query(
            """
            SELECT k.key_id, k.container, u.name, k.databases, k.name, k.created_at, k.revoked_at
              FROM canopy.server_keys k JOIN canopy.users u ON u.id = k.user_id ORDER BY k.created_at, k.id
            """,
            logger: logger
        )
        var keys: [ServerKeySummary] = []
        for try await (keyID, container, user, databases, name, created, revoked) in rows.decode((String, String, String, [String], String, Date, Date?).self) {
            keys.append(ServerKeySummary(keyID: keyID, container: container, user: user, databases: databases, name: name, created: created, revoked: revoked))
        }
        return keys
    }

    /// Revokes the one live key whose identifier starts with `prefix` (at
    /// least 8 hex digits). Its requests are refused within the gateway's
    /// key cache time (4 s).
    public func revoke(prefix: String, connection: PostgresConnection) async throws -> ServerKeySummary {
        guard prefix.count >= 8, prefix.count <= 64, prefix.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw StoreError(.invalidInput, "'\(prefix.prefix(70))' is not a key prefix: give at least 8 of the key ID's hex digits (canopy keys list shows them)")
        }
        return try await connection.inTransaction(logger: logger) { connection in
            let live = try await connection.query(
                "SELECT key_id FROM canopy.server_keys WHERE revoked_at IS NULL AND starts_with(key_id, \(prefix)) FOR UPDATE",
                logger: logger
            ).collect().map { try $0.decode(String.self) }
            guard live.count == 1, let keyID = live.first else {
                throw live.isEmpty
                    ? StoreError(.notFound, "no live key's ID starts with \(prefix) (canopy keys list shows them)")
                    : StoreError(.invalidInput, "\(live.count) live keys' IDs start with \(prefix); give more of it")
            }
            _ = try await connection.query("UPDATE canopy.server_keys SET revoked_at = now() WHERE key_id = \(keyID)", logger: logger).collect()
            return try await list(connection: connection).first { $0.keyID == keyID }!
        }
    }
}
