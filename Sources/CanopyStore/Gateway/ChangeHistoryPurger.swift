import Logging
import PostgresNIO
import ServiceLifecycle

/// Keeps the change feeds' history bounded: every `interval` it removes
/// tombstones and zone departures older than `retention`
/// (`canopy.purge_change_history`), after which older tokens are
/// CHANGE_TOKEN_EXPIRED. One of the gateway's services.
public struct ChangeHistoryPurger: Service {
    let client: PostgresClient
    let retention: Duration
    let interval: Duration
    let logger: Logger

    public init(client: PostgresClient, retention: Duration, interval: Duration = .seconds(3600), logger: Logger) {
        self.client = client
        self.retention = retention
        self.interval = interval
        self.logger = logger
    }

    /// Purges every `interval` until graceful shutdown, which ends it
    /// without an error.
    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                await purgeOnce()
            }
        }
    }

    /// One purge; failures are logged and tried again next time.
    public func purgeOnce() async {
        let seconds = Double(retention.components.seconds) + Double(retention.components.attoseconds) / 1e18
        do {
            let rows = try await client.query(
                "SELECT canopy.purge_change_history(make_interval(secs => \(seconds)))", logger: logger
            )
            for try await removed in rows.decode(Int64.self) where removed > 0 {
                logger.info("purged change history", metadata: ["canopy.purged.rows": "\(removed)", "canopy.retention.seconds": "\(seconds)"])
            }
        } catch {
            logger.warning("purging change history failed", metadata: ["canopy.error": "\(String(reflecting: error))"])
        }
    }
}
