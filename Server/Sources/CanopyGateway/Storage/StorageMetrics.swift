import CanopyRequestStore
import Logging
import Metrics

/// Storage quotas on /metrics (issue 53): refusals as they happen, and the
/// totals read from the database when /metrics is scraped, so nothing runs
/// between scrapes and no request pays for them.
enum StorageMetrics {
    /// Writes and uploads refused QUOTA_EXCEEDED.
    static let refusals = Counter(label: "canopy_quota_refusals_total")
    static let users = Gauge(label: "canopy_storage_users")
    static let storedBytes = Gauge(label: "canopy_storage_stored_bytes")
    static let usersNearQuota = Gauge(label: "canopy_storage_users_near_quota")
    static let usersAtQuota = Gauge(label: "canopy_storage_users_at_quota")

    /// Reads the totals; a database that does not answer leaves the last values.
    static func refresh(from database: RequestDatabase, logger: Logger) async {
        do {
            let totals = try await database.storageTotals(logger: logger)
            users.record(totals.users)
            storedBytes.record(totals.storedBytes)
            usersNearQuota.record(totals.usersNearQuota)
            usersAtQuota.record(totals.usersAtQuota)
        } catch {
            logger.debug("storage totals not read for /metrics", metadata: ["canopy.error": "\(error)"])
        }
    }
}
