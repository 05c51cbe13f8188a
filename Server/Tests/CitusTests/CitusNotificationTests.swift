@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Synchronization
import Testing

/// Live notifications on Citus (issue 67, DECISIONS 150): a trigger's
/// NOTIFY is heard only on the worker whose shard it fired on, so the
/// gateway's listener listens on every node.
@Suite("Citus: change notifications from every worker", .serialized)
struct CitusNotificationTests {
    /// A Citus database whose distributed table `bells` notifies
    /// `canopy_changes` as `canopy.touch_zone` does (`'<zone> <owner>'`, the
    /// owner standing for both) for each row inserted, from the worker
    /// holding the row; and an owner on each worker.
    static func bellsDatabase() async throws -> (DatabaseEndpoint, owners: [Int64]) {
        let endpoint = try await TestDatabase.shared.migratedCitusDatabase()
        let owners = try await explained {
            try await TestDatabase.withConnection(endpoint) { connection in
                for statement in [
                    // Triggers on distributed tables (the migrator sets this for Canopy's, step 1).
                    "SET citus.enable_unsafe_triggers = on",
                    "CREATE TABLE bells (owner_id bigint, n int)",
                    "SELECT create_distributed_table('bells', 'owner_id')",
                    """
                    CREATE FUNCTION ring() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN PERFORM pg_notify('canopy_changes', NEW.owner_id || ' ' || NEW.owner_id); RETURN NEW; END $$
                    """,
                    "CREATE TRIGGER bells_ring AFTER INSERT ON bells FOR EACH ROW EXECUTE FUNCTION ring()",
                ] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
                }
                return try await connection.texts("""
                    SELECT min(o)::text FROM generate_series(1, 20) o
                      JOIN citus_shards s ON s.shardid = get_shard_id_for_distribution_column('bells', o)
                     GROUP BY s.nodename ORDER BY 1
                    """).compactMap { $0.flatMap(Int64.init) }
            }
        }
        #expect(owners.count == 2, "an owner on each worker")
        return (endpoint, owners)
    }

    /// Runs `body` with a gateway database on the Citus engine, its pool and
    /// listener running, and the events its one subscriber has been offered.
    static func withListener(
        _ endpoint: DatabaseEndpoint, engine: DatabaseEngine = .citus,
        _ body: @Sendable (RequestDatabase, Seen) async throws -> Void
    ) async throws {
        let database = try RequestDatabase(
            endpoint: endpoint.asUser("canopy_gateway", password: nil), maximumConnections: 2,
            listenerHeartbeat: .seconds(2), engine: engine, logger: TestDatabase.logger
        )
        let seen = Seen()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.primary.run() }
            group.addTask { try await database.notifier.run() }
            defer { group.cancelAll() }
            let (id, _) = database.notifier.subscribe { event in
                seen.events.withLock { $0.append(event) }
                return true
            }
            defer { database.notifier.unsubscribe(id) }
            try await body(database, seen)
        }
    }

    /// Inserts a row for `owner` every half second until the listener has
    /// been offered that owner's notification (a listener may still be
    /// connecting when the first rings); false after `timeout`.
    static func heard(_ owner: Int64, on endpoint: DatabaseEndpoint, seen: Seen, timeout: Duration = .seconds(30)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        return try await TestDatabase.withConnection(endpoint) { connection in
            while ContinuousClock.now < deadline {
                try await connection.query("INSERT INTO bells VALUES (\(owner), 1)", logger: TestDatabase.logger)
                let found = await eventually(timeout: .milliseconds(500)) {
                    seen.events.withLock { $0.contains(ChangeNotifier.Event.zone(id: owner, owner: owner)) }
                }
                if found { return true }
            }
            return false
        }
    }

    /// The events the one subscriber was offered.
    final class Seen: Sendable {
        let events = Mutex<[ChangeNotifier.Event]>([])
    }

    @Test("a row written on either worker is heard by the gateway's listener")
    func everyWorker() async throws {
        let (endpoint, owners) = try await Self.bellsDatabase()
        try await Self.withListener(endpoint) { _, seen in
            for owner in owners {
                let heard = try await Self.heard(owner, on: endpoint, seen: seen)
                #expect(heard, "owner \(owner)'s notification, from its worker")
            }
        }
    }

    @Test("a worker's listening connection cut: it reconnects on its own and that worker is heard again")
    func reconnects() async throws {
        let (endpoint, owners) = try await Self.bellsDatabase()
        let running = try await TestDatabase.cluster().start(logger: TestDatabase.logger)
        try await Self.withListener(endpoint) { _, seen in
            let owner = owners[0]
            let heardFirst = try await Self.heard(owner, on: endpoint, seen: seen)
            #expect(heardFirst)
            // Owner 0's worker: the one its shard is on.
            let worker = try await TestDatabase.withConnection(endpoint) { connection in
                try await connection.texts("SELECT nodename FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('bells', \(owner))")
            }
            let node = try #require(running.citusWorkers.first { [$0.socketDirectory] == worker })
            let cut = try await TestDatabase.withConnection(node.adminEndpoint.database(endpoint.database)) { connection in
                try await connection.texts("""
                    SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity
                     WHERE usename = 'canopy_gateway' AND (query LIKE 'LISTEN%' OR query LIKE '%canopy_listener_heartbeat%')
                    """)
            }
            // Its last statement: the LISTEN, or a heartbeat since.
            #expect(cut == ["true"], "the gateway's one listening connection on that worker: \(cut)")
            seen.events.withLock { $0.removeAll() }
            let heardAgain = try await Self.heard(owner, on: endpoint, seen: seen)
            #expect(heardAgain, "heard again after the reconnection")
        }
    }
}
