import Foundation
import Logging
import PostgresNIO

/// The keys the gateway signs cursors, change tokens and asset URLs with,
/// kept in the database (so every gateway process agrees). Read again after
/// `refreshInterval`, so a rotation (`canopy secrets rotate`) reaches every
/// process within it; rotation keeps the old key accepted for longer than
/// that (docs/SECURITY.md, "Rotating the server's secrets").
public actor ServerSecrets {
    /// A name's keys as last read.
    public struct Keys: Sendable, Equatable {
        /// What new values are signed with.
        public var current: Data
        /// Rotated out but inside their overlap window: what they signed is
        /// still accepted. Newest first.
        public var accepted: [Data]
        /// Retired by `canopy restore`, or rotated out past their window:
        /// what they signed is recognised as the server's own but old.
        public var retired: [Data]
    }

    private var keys: [String: (keys: Keys, read: ContinuousClock.Instant)] = [:]
    private let primary: PrimaryPool
    /// How long a read is trusted; 0 reads on every call (tests).
    public private(set) var refreshInterval: Duration = .seconds(30)

    init(primary: PrimaryPool) {
        self.primary = primary
    }

    public func setRefreshInterval(_ interval: Duration) {
        refreshInterval = interval
    }

    /// The current key named `name`, created on first use by whichever
    /// process asks first.
    public func key(_ name: String, logger: Logger) async throws -> Data {
        try await keys(name, logger: logger).current
    }

    /// The key `name` with the keys it replaced, read once per
    /// `refreshInterval` in one round trip.
    public func keys(_ name: String, logger: Logger) async throws -> Keys {
        if let cached = keys[name], cached.read.duration(to: .now) < refreshInterval { return cached.keys }
        var generator = SystemRandomNumberGenerator()
        let candidate = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let rows = try await primary.withConnection { connection in
            try await connection.query("""
                SELECT 0, canopy.server_secret(\(name), \(candidate)), 0::bigint
                UNION ALL SELECT 1, a.secret, a.n FROM canopy.accepted_server_secrets(\(name)) WITH ORDINALITY AS a(secret, n)
                UNION ALL SELECT 2, r.secret, r.n FROM canopy.retired_server_secrets(\(name)) WITH ORDINALITY AS r(secret, n)
                ORDER BY 1, 3
                """, logger: logger).collect()
        }
        var current: Data?, accepted: [Data] = [], retired: [Data] = []
        for row in rows {
            let (kind, secret, _) = try row.decode((Int32, Data, Int64).self)
            switch kind {
            case 0: current = secret
            case 1: accepted.append(secret)
            default: retired.append(secret)
            }
        }
        guard let current else { throw StoreError(.query, "the server secret \(name) could not be read") }
        let read = Keys(current: current, accepted: accepted, retired: retired)
        keys[name] = (read, .now)
        return read
    }
}
