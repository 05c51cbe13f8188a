import Logging
import PostgresNIO
import Synchronization

/// The zones' owners whose shards a write transaction on Citus holds where
/// they are (`canopy.hold_placements`, DECISIONS 180), so that a shard move
/// waits for the transaction, or the transaction for the move, and never
/// runs half on the old placement and half on the new. The caller's are
/// held with `canopy.act_as`, first; each statement's other owners before
/// the statement runs (``hold(ids:names:on:logger:)``). On one PostgreSQL
/// nothing is held.
public final class PlacementHold: Sendable {
    private let held = Mutex<(ids: Set<Int64>, names: Set<String>)>(([], []))

    /// The hold of the write transaction this task runs in, if it runs on
    /// Citus.
    @TaskLocal public static var current: PlacementHold?

    /// A transaction whose caller's shards `canopy.act_as`'s statement held.
    init(caller: Int64) {
        held.withLock { _ = $0.ids.insert(caller) }
    }

    /// Holds the shards of the owners a statement names that the
    /// transaction does not hold yet, in one round trip (none when it holds
    /// them all): owners named by record name are found by
    /// `canopy.owner_id_named` in the same statement.
    public func hold(ids: [Int64], names: [String], on connection: PostgresConnection, logger: Logger) async throws {
        let (newIDs, newNames) = held.withLock { held -> ([Int64], [String]) in
            let ids = Set(ids).subtracting(held.ids).sorted()
            let names = Set(names).subtracting(held.names).sorted()
            held.ids.formUnion(ids)
            held.names.formUnion(names)
            return (ids, names)
        }
        guard !newIDs.isEmpty || !newNames.isEmpty else { return }
        // Read to the end: an error is told with the result.
        _ = try await connection.query(
            "SELECT canopy.hold_placements(\(newIDs)::int8[] || ARRAY(SELECT canopy.owner_id_named(n) FROM unnest(\(newNames)::text[]) AS n))",
            logger: logger
        ).collect()
    }
}
