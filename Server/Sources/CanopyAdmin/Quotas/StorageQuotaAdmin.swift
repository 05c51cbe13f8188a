import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// `canopy quotas`: the default storage quota, each user's own, and what
/// each user stores (issue 53; docs/QUOTAS.md). Runs on an administrator's
/// connection; the tables are canopy.storage_quota_default and
/// canopy.storage_usage (migrations/0032), which the gateway cannot write.
public struct StorageQuotaAdmin: Sendable {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// One user's storage.
    public struct Usage: Sendable, Codable, Equatable {
        public var userRecordName: String
        public var name: String
        public var recordCount: Int64
        public var fieldBytes: Int64
        public var assetBytes: Int64
        public var pendingUploadBytes: Int64
        /// The quota that applies; nil: no limit.
        public var quotaBytes: Int64?
        /// Whether that quota is the user's own (else the default).
        public var ownQuota: Bool

        public var storedBytes: Int64 { fieldBytes + assetBytes }
        public var usedBytes: Int64 { storedBytes + pendingUploadBytes }
    }

    /// The default quota (nil: no limit).
    public func defaultQuota(connection: PostgresConnection) async throws -> Int64? {
        let rows = try await connection.query("SELECT quota_bytes FROM canopy.storage_quota_default", logger: logger)
        for try await quota in rows.decode(Int64?.self) { return quota }
        return nil
    }

    /// Sets the default quota (nil: no limit).
    public func setDefault(_ bytes: Int64?, connection: PostgresConnection) async throws {
        try await connection.query("UPDATE canopy.storage_quota_default SET quota_bytes = \(bytes)", logger: logger)
    }

    /// Gives `user` a quota of their own (`bytes` nil: no limit), or with
    /// `useDefault` puts them back on the default.
    public func set(_ user: UserSummary, bytes: Int64?, useDefault: Bool = false, connection: PostgresConnection) async throws {
        try await connection.query("""
            INSERT INTO canopy.storage_usage (user_id, quota_bytes, has_quota) VALUES (\(user.id), \(useDefault ? nil : bytes), \(!useDefault))
            ON CONFLICT (user_id) DO UPDATE SET quota_bytes = EXCLUDED.quota_bytes, has_quota = EXCLUDED.has_quota
            """, logger: logger)
    }

    /// One user's storage.
    public func usage(of user: UserSummary, connection: PostgresConnection) async throws -> Usage {
        if let usage = try await list(where: user.id, limit: 1, connection: connection).first { return usage }
        return Usage(userRecordName: user.userRecordName, name: user.name, recordCount: 0, fieldBytes: 0, assetBytes: 0,
                     pendingUploadBytes: 0, quotaBytes: try await defaultQuota(connection: connection), ownQuota: false)
    }

    /// The users who store the most, most first.
    public func largest(limit: Int, connection: PostgresConnection) async throws -> [Usage] {
        try await list(where: nil, limit: limit, connection: connection)
    }

    private func list(where userID: Int64?, limit: Int, connection: PostgresConnection) async throws -> [Usage] {
        let rows = try await connection.query("""
            SELECT u.record_name, u.name, coalesce(s.record_count, 0), coalesce(s.field_bytes, 0), coalesce(s.asset_bytes, 0),
                   canopy.pending_upload_bytes(u.id), canopy.storage_quota_of(u.id), coalesce(s.has_quota, false)
              FROM canopy.users u
              LEFT JOIN canopy.storage_usage s ON s.user_id = u.id
             WHERE u.id <> 0 AND (\(userID)::bigint IS NULL OR u.id = \(userID))
             ORDER BY coalesce(s.field_bytes + s.asset_bytes, 0) DESC, u.id
             LIMIT \(Int64(limit))
            """, logger: logger)
        var usages: [Usage] = []
        for try await (recordName, name, records, fields, assets, pending, quota, own) in rows.decode(
            (String, String, Int64, Int64, Int64, Int64, Int64?, Bool).self
        ) {
            usages.append(Usage(userRecordName: recordName, name: name, recordCount: records, fieldBytes: fields, assetBytes: assets,
                                pendingUploadBytes: pending, quotaBytes: quota, ownQuota: own))
        }
        return usages
    }
}
