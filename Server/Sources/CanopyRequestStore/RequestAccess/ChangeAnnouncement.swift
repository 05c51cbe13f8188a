import Logging
import PostgresNIO
import Synchronization

/// The zones' owners a write transaction names, gathered while it runs, so
/// that on Citus it can end by announcing their zones' changes from the
/// coordinator (`canopy.announce_changes`, DECISIONS 163 and 172): a worker
/// cannot NOTIFY in a transaction the coordinator prepares. The caller is
/// always among them; the statements add the owners they name
/// (`SQLStatement.owners`). On one PostgreSQL the triggers NOTIFY, and
/// nothing is gathered.
public final class ChangeAnnouncement: Sendable {
    private let owners = Mutex<(ids: Set<Int64>, names: Set<String>)>(([], []))

    /// The announcement of the write transaction this task runs in, if it
    /// runs on Citus.
    @TaskLocal public static var current: ChangeAnnouncement?

    init(caller: Int64) {
        owners.withLock { _ = $0.ids.insert(caller) }
    }

    /// Owners whose zones a statement of the transaction names.
    public func note(ids: [Int64], names: [String]) {
        guard !ids.isEmpty || !names.isEmpty else { return }
        owners.withLock { owners in
            owners.ids.formUnion(ids)
            owners.names.formUnion(names)
        }
    }

    /// NOTIFYs the changes of the noted owners' zones that this transaction
    /// made, on the coordinator, before it commits.
    func announce(on connection: PostgresConnection, logger: Logger) async throws {
        let (ids, names) = owners.withLock { (Array($0.ids).sorted(), Array($0.names).sorted()) }
        // Read to the end: an error is told with the result, and unread it
        // would leave the transaction failed for a COMMIT that rolls back.
        _ = try await connection.query("SELECT canopy.announce_changes(\(ids), \(names))", logger: logger).collect()
    }
}
