import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// One entry of a share's activity log, as `canopy shares activity` prints it.
public struct ShareActivityEntry: Sendable, Codable, Equatable {
    public var id: Int64
    public var at: Date
    public var zone: String
    /// The root's recordName, for a hierarchy share.
    public var root: String?
    public var event: String
    /// Who did it (userRecordName); nil: the server.
    public var actor: String?
    /// Who it is about: a userRecordName, or an invitation's email or phone.
    public var subject: String?
    /// What changed, as JSON text.
    public var detail: String
    /// When the share was deleted, if it was.
    public var shareGone: Date?
}

/// Reads shares' activity logs for `canopy shares activity`: an owner's
/// shares of one zone, including shares (and zones) deleted within the
/// retention period, which the gateway's `Share.activity` can no longer
/// reach. The administrator reads past row-level security; the log itself
/// stays append-only.
public struct ShareActivityAdmin: Sendable {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// The log of `owner`'s shares in `zone` (only the one rooted at `root`
    /// when given), oldest first, after entry `after`, at most `limit`.
    public func activity(
        owner nameOrRecordName: String, zone: String, root: String?, after: Int64 = 0, limit: Int = 1000, connection: PostgresConnection
    ) async throws -> [ShareActivityEntry] {
        guard limit >= 1 else { throw StoreError(.invalidInput, "--limit must be at least 1") }
        let user = try await UserAdmin(logger: logger).find(nameOrRecordName, connection: connection)
        let rows = try await connection.query(
            """
            SELECT id, at, zone_name, root_name, event, actor_name, subject, detail::text, share_gone_at
              FROM canopy.share_activity
             WHERE owner_id = \(user.id) AND zone_name = \(zone) AND (\(root)::text IS NULL OR root_name = \(root)::text) AND id > \(after)
             ORDER BY id LIMIT \(limit)
            """,
            logger: logger
        )
        var entries: [ShareActivityEntry] = []
        for try await (id, at, zoneName, rootName, event, actor, subject, detail, gone) in rows.decode(
            (Int64, Date, String, String?, String, String?, String?, String, Date?).self
        ) {
            entries.append(ShareActivityEntry(id: id, at: at, zone: zoneName, root: rootName, event: event, actor: actor,
                                              subject: subject, detail: detail, shareGone: gone))
        }
        if entries.isEmpty && after == 0 {
            let known = try await connection.query("SELECT count(*) FROM canopy.zones WHERE owner_id = \(user.id) AND name = \(zone)", logger: logger)
            var exists = false
            for try await count in known.decode(Int64.self) { exists = count > 0 }
            if !exists {
                throw StoreError(.notFound, "\(user.name) has no zone \(zone), and no share of a zone by that name was logged in the retention period")
            }
        }
        return entries
    }
}
