import Logging
import PostgresNIO

/// Storage over every user, for /metrics (`canopy.storage_totals()`, which
/// names nobody): how much is stored and how many users are near or at
/// their quota (docs/QUOTAS.md).
public struct StorageTotals: Sendable, Equatable {
    public var users: Int64
    public var storedBytes: Int64
    public var usersNearQuota: Int64
    public var usersAtQuota: Int64
}

extension RequestDatabase {
    /// The totals, within 2 s (a scrape must not wait on a database that is away).
    public func storageTotals(logger: Logger) async throws -> StorageTotals {
        let rows = try await client.query("SELECT * FROM canopy.storage_totals()", within: .seconds(2), logger: logger)
        guard let row = rows.first else { return StorageTotals(users: 0, storedBytes: 0, usersNearQuota: 0, usersAtQuota: 0) }
        let (users, stored, near, at) = try row.decode((Int64, Int64, Int64, Int64).self)
        return StorageTotals(users: users, storedBytes: stored, usersNearQuota: near, usersAtQuota: at)
    }
}
