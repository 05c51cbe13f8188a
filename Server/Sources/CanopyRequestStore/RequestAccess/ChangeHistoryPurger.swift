import Logging
import PostgresNIO
import ServiceLifecycle

/// Keeps the change feeds' history bounded: every `interval` it removes
/// tombstones and zone departures older than `retention`
/// (`canopy.purge_change_history`), after which older tokens are
/// CHANGE_TOKEN_EXPIRED; and the activity logs of shares deleted longer
/// than `shareActivityRetention` ago (`canopy.purge_share_activity`). One
/// of the gateway's services; with many gateways
/// on one database, each interval's purge is claimed by one of them
/// (`canopy.claim_history_purge`), so it runs once, not once per gateway.
public struct ChangeHistoryPurger: Service {
    let primary: PrimaryPool
    let retention: Duration
    let shareActivityRetention: Duration
    let interval: Duration
    let logger: Logger

    public init(
        primary: PrimaryPool, retention: Duration, shareActivityRetention: Duration = .seconds(90 * 24 * 3600),
        interval: Duration = .seconds(3600), logger: Logger
    ) {
        self.primary = primary
        self.retention = retention
        self.shareActivityRetention = shareActivityRetention
        self.interval = interval
        self.logger = logger
    }

    /// Purges every `interval` until graceful shutdown, which ends it
    /// without an error.
    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                if await claim() { await purgeOnce() }
            }
        }
    }

    /// Whether this gateway purges this interval: true for the first of
    /// the gateways sharing the database to ask (false when asking fails).
    public func claim() async -> Bool {
        let seconds = Self.seconds(interval)
        do {
            let rows = try await primary.withConnection { [logger] connection in
                try await connection.query("SELECT canopy.claim_history_purge(make_interval(secs => \(seconds)))", logger: logger).collect()
            }
            if let claimed = try rows.first?.decode(Bool.self) { return claimed }
        } catch {
            logger.warning("claiming the change-history purge failed", metadata: ["canopy.error": "\(String(reflecting: error))"])
        }
        return false
    }

    /// One purge, batch by batch (a short transaction each, so writers to
    /// a zone wait at most for one batch); failures are logged and tried
    /// again next time.
    public func purgeOnce(batch: Int = 5000) async {
        let seconds = Self.seconds(retention)
        var total: Int64 = 0
        do {
            while !Task.isCancelled {
                let rows = try await primary.withConnection { [logger] connection in
                    try await connection.query(
                        "SELECT canopy.purge_change_history(make_interval(secs => \(seconds)), \(batch))", logger: logger
                    ).collect()
                }
                let removed = try rows.first?.decode(Int64.self) ?? 0
                total += removed
                if removed < batch { break }
            }
            if total > 0 {
                logger.info("purged change history", metadata: ["canopy.purged.rows": "\(total)", "canopy.retention.seconds": "\(seconds)"])
            }
            let activitySeconds = Self.seconds(shareActivityRetention)
            let rows = try await primary.withConnection { [logger] connection in
                try await connection.query(
                    "SELECT canopy.purge_share_activity(make_interval(secs => \(activitySeconds)))", logger: logger
                ).collect()
            }
            let entries = try rows.first?.decode(Int64.self) ?? 0
            if entries > 0 {
                logger.info("purged deleted shares' activity", metadata: ["canopy.purged.rows": "\(entries)", "canopy.retention.seconds": "\(activitySeconds)"])
            }
        } catch {
            logger.warning("purging change history failed", metadata: ["canopy.error": "\(String(reflecting: error))"])
        }
    }

    /// A duration in seconds, for `make_interval(secs => …)`.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
