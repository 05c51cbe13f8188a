import Foundation
import Logging
import PostgresNIO

/// The keys the gateway signs cursors and tokens with, kept in the database
/// (so every gateway process agrees) and fetched once per process.
public actor ServerSecrets {
    private var keys: [String: Data] = [:]
    private var retired: [String: [Data]] = [:]
    private let primary: PrimaryPool

    init(primary: PrimaryPool) {
        self.primary = primary
    }

    /// The key named `name`, created on first use by whichever process asks first.
    public func key(_ name: String, logger: Logger) async throws -> Data {
        if let key = keys[name] { return key }
        var generator = SystemRandomNumberGenerator()
        let candidate = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let rows = try await primary.withConnection { connection in
            try await connection.query("SELECT canopy.server_secret(\(name), \(candidate))", logger: logger).collect()
        }
        let secret = try rows.first?.decode(Data.self)
        guard let secret else { throw StoreError(.query, "the server secret \(name) could not be read") }
        keys[name] = secret
        return secret
    }

    /// The key `name` and the keys it replaced (`canopy restore` retires the
    /// change-token key), newest first: one call, both fetched once per
    /// process (a restore starts the gateways again).
    public func keys(_ name: String, logger: Logger) async throws -> (current: Data, retired: [Data]) {
        let current = try await key(name, logger: logger)
        if let keys = retired[name] { return (current, keys) }
        let rows = try await primary.withConnection { connection in
            try await connection.query("SELECT canopy.retired_server_secrets(\(name))", logger: logger).collect()
        }
        let keys = try rows.map { try $0.decode(Data.self) }
        retired[name] = keys
        return (current, keys)
    }
}
