import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// migrations/0043: canopy.push_watchers counts each user's push
/// subscriptions (and PUBLIC ones), kept by the subscriptions' trigger, and
/// push_covered reads it with the zone's memberships, so a change queues a
/// push outbox row exactly when one of the zone's members subscribes
/// (DECISIONS 162: on Citus both are on the zone's node).
@Suite("Who may be woken by push")
struct PushWatchersTests {
    @Test("the counts follow subscriptions saved, changed and deleted, and go with the user")
    func countsFollowSubscriptions() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        let answers = try await TestDatabase.withConnection(endpoint) { connection in
            func run(_ sql: String) async throws -> [String?] {
                try await connection.texts(PostgresQuery(unsafeSQL: sql))
            }
            let counts = """
                SELECT coalesce(string_agg(CASE w.user_id WHEN \(alice.id) THEN 'alice' WHEN \(bob.id) THEN 'bob' ELSE '?' END
                                           || ':' || w.subscriptions || '/' || w.public_subscriptions, ' ' ORDER BY w.user_id), '-')
                  FROM canopy.push_watchers w
                """
            var answers = try await run(counts)
            _ = try await run("""
                INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope) VALUES
                    (\(alice.id), 'all', 'DATABASE', 'PRIVATE'), (\(alice.id), 'shared', 'DATABASE', 'SHARED'), (\(bob.id), 'all', 'DATABASE', 'PRIVATE')
                """)
            _ = try await run("""
                INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope, zone_id, record_type)
                SELECT \(alice.id), 'news', 'QUERY', 'PUBLIC', id, 'News' FROM canopy.zones WHERE owner_id = 0
                """)
            answers += try await run(counts)
            _ = try await run("DELETE FROM canopy.push_subscriptions WHERE user_id = \(alice.id) AND subscription_id IN ('news', 'shared')")
            _ = try await run("UPDATE canopy.push_subscriptions SET user_id = \(alice.id), subscription_id = 'bobs' WHERE user_id = \(bob.id)")
            answers += try await run(counts)
            _ = try await run("DELETE FROM canopy.users WHERE id = \(alice.id)")
            answers += try await run(counts)
            return answers.map { $0 ?? "NULL" }
        }
        #expect(answers == ["-", "alice:3/1 bob:1/0", "alice:2/0 bob:0/0", "bob:0/0"])
    }

    @Test("a write queues a push outbox row only when one of the zone's members subscribes")
    func outboxFollowsMembers() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        let queued = try await TestDatabase.withConnection(endpoint) { connection in
            func run(_ sql: String) async throws -> [String?] {
                try await connection.texts(PostgresQuery(unsafeSQL: sql))
            }
            _ = try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Trips')")
            _ = try await run("SELECT set_config('canopy.user_id', '\(alice.id)', false)")
            var queued: [String?] = []
            func write(_ name: String) async throws {
                _ = try await run("""
                    INSERT INTO canopy.records (zone_id, record_name, record_type)
                    SELECT id, '\(name)', 'Item' FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Trips'
                    """)
                queued += try await run("SELECT count(*)::text FROM canopy.push_outbox")
            }
            // Nobody subscribes; bob (not a member) does; alice shares the
            // zone with bob and he accepts; alice unsubscribes, bob stays.
            try await write("one")
            _ = try await run("INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope) VALUES (\(bob.id), 'shared', 'DATABASE', 'SHARED')")
            try await write("two")
            _ = try await run("""
                INSERT INTO canopy.shares (zone_id, title) SELECT id, 'Trips' FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Trips'
                """)
            _ = try await run("""
                INSERT INTO canopy.participants (share_id, user_id, role, permission, status)
                SELECT id, \(bob.id), 'PRIVATE_USER', 'READ_ONLY', 'ACCEPTED' FROM canopy.shares WHERE title = 'Trips'
                """)
            _ = try await run("DELETE FROM canopy.push_outbox")
            try await write("three")
            return queued.map { $0 ?? "NULL" }
        }
        #expect(queued == ["0", "0", "1"])
    }

    @Test("two transactions saving one user's subscriptions at once leave both counted")
    func concurrentSavesCount() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let insertA = PostgresQuery(unsafeSQL: "INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope) VALUES (\(alice.id), 'a', 'DATABASE', 'PRIVATE')")
        let insertB = PostgresQuery(unsafeSQL: "INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope) VALUES (\(alice.id), 'b', 'DATABASE', 'PRIVATE')")
        try await TestDatabase.withConnection(endpoint) { first in
            try await TestDatabase.withConnection(endpoint) { second in
                try await first.query("BEGIN", logger: TestDatabase.logger)
                try await first.query(insertA, logger: TestDatabase.logger)
                try await second.query("BEGIN", logger: TestDatabase.logger)
                // The second waits for the first's watcher row, then counts on it.
                let waiting = Task {
                    try await second.query(insertB, logger: TestDatabase.logger)
                    try await second.query("COMMIT", logger: TestDatabase.logger)
                }
                try await first.query("COMMIT", logger: TestDatabase.logger)
                try await waiting.value
            }
        }
        let count = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: "SELECT subscriptions::text FROM canopy.push_watchers WHERE user_id = \(alice.id)"))
        }
        #expect(count == ["2"])
    }
}
