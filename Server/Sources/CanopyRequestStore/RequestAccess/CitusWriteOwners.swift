import Logging
import PostgresNIO
import Synchronization

/// The zones' owners a write transaction on Citus names, gathered while it
/// runs, for the two things Citus needs of them: their shards held where
/// they are before a statement is routed to them (`canopy.hold_placements`,
/// DECISIONS 180), so that a shard move waits for the transaction, or the
/// transaction for the move, and never runs half on the old placement and
/// half on the new; and, at the end, their zones' changes announced from
/// the coordinator (`canopy.announce_changes`, DECISIONS 163 and 172), since
/// a worker cannot NOTIFY in a transaction the coordinator prepares.
/// The caller is named first (held with `canopy.act_as`); each statement
/// adds the owners it names (`SQLStatement.owners`). On one PostgreSQL
/// there is none: nothing is held, and the triggers NOTIFY.
public final class CitusWriteOwners: Sendable {
    private let named = Mutex<(ids: Set<Int64>, names: Set<String>)>(([], []))

    /// The owners of the write transaction this task runs in, if it runs on
    /// Citus.
    @TaskLocal public static var current: CitusWriteOwners?

    /// A transaction whose caller's shards `canopy.act_as`'s statement held.
    init(caller: Int64) {
        named.withLock { _ = $0.ids.insert(caller) }
    }

    /// Before a statement runs: the owners it names that the transaction
    /// had not named yet, their shards held in one round trip (none when it
    /// named them all); owners named by record name are found by
    /// `canopy.owner_id_named` in the same statement.
    public func willRun(naming ids: [Int64], names: [String], on connection: PostgresConnection, logger: Logger) async throws {
        guard !ids.isEmpty || !names.isEmpty else { return }
        let (newIDs, newNames) = named.withLock { named -> ([Int64], [String]) in
            let ids = Set(ids).subtracting(named.ids).sorted()
            let names = Set(names).subtracting(named.names).sorted()
            named.ids.formUnion(ids)
            named.names.formUnion(names)
            return (ids, names)
        }
        guard !newIDs.isEmpty || !newNames.isEmpty else { return }
        // Read to the end: an error is told with the result.
        _ = try await connection.query(
            "SELECT canopy.hold_placements(\(newIDs)::int8[] || ARRAY(SELECT canopy.owner_id_named(n) FROM unnest(\(newNames)::text[]) AS n))",
            logger: logger
        ).collect()
    }

    /// NOTIFYs the changes this transaction made to the named owners'
    /// zones, on the coordinator, before it commits.
    func announce(on connection: PostgresConnection, logger: Logger) async throws {
        let (ids, names) = named.withLock { (Array($0.ids).sorted(), Array($0.names).sorted()) }
        // Read to the end: an error is told with the result, and unread it
        // would leave the transaction failed for a COMMIT that rolls back.
        _ = try await connection.query("SELECT canopy.announce_changes(\(ids), \(names))", logger: logger).collect()
    }
}
