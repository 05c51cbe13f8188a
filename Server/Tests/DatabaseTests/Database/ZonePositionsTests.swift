import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// migrations/0045 (DECISIONS 165): each zone numbers its own change
/// positions, so that on Citus they are drawn on the zone's shard. A
/// transaction writing a zone raises the zone's feed_base by one under its
/// lock and counts on from `feed_base << 20`; the zone feeds' proof
/// (docs/CHANGE_FEEDS.md) needs every later transaction's positions above
/// every earlier one's, and a record's change tags must never repeat.
@Suite("A zone's own change positions")
struct ZonePositionsTests {
    private static let step: Int64 = 1 << 20

    /// The one number `sql` answers; -1 for none, so a failure shows what was found.
    private static func number(_ connection: PostgresConnection, _ sql: String) async throws -> Int64 {
        try await texts(connection, "SELECT n::text FROM (\(sql)) answer(n)").first.flatMap { $0.flatMap { Int64($0) } } ?? -1
    }

    private static func run(_ connection: PostgresConnection, _ sql: String) async throws {
        _ = try await texts(connection, sql)
    }

    /// The statement's answers; an error names the statement and what the server said.
    private static func texts(_ connection: PostgresConnection, _ sql: String) async throws -> [String?] {
        do {
            return try await connection.texts(PostgresQuery(unsafeSQL: sql))
        } catch let error as PSQLError {
            Issue.record("\(sql): \(error.serverInfo?[.message] ?? String(reflecting: error))")
            throw error
        }
    }

    @Test("each transaction writing a zone takes the zone's next base and counts on from it; another zone's writes leave it alone")
    func positionsFollowTheBase() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let seen = try await TestDatabase.withConnection(endpoint) { connection in
            func one(_ sql: String) async throws -> Int64 {
                try await Self.number(connection, sql)
            }
            func run(_ sql: String) async throws {
                try await Self.run(connection, sql)
            }
            try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Trips'), (\(alice.id), 'Notes')")
            try await run("SELECT set_config('canopy.user_id', '\(alice.id)', false)")
            let trips = try await one("SELECT id FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Trips'")
            let notes = try await one("SELECT id FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Notes'")
            let base = try await one("SELECT feed_base FROM canopy.zones WHERE id = \(trips)")
            func position(_ table: String, _ name: String) async throws -> Int64 {
                try await one("SELECT max(change_seq) FROM canopy.\(table) WHERE zone_id = \(trips) AND record_name = '\(name)'") - base * Self.step
            }
            try await run("BEGIN")
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(trips), 'r1', 'Item'), (\(trips), 'r2', 'Item')")
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(trips), 'r3', 'Item')")
            try await run("COMMIT")
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(notes), 'n1', 'Item')")
            try await run("UPDATE canopy.records SET fields = '{\"n\": 1}' WHERE zone_id = \(trips) AND record_name = 'r1'")
            try await run("DELETE FROM canopy.records WHERE zone_id = \(trips) AND record_name = 'r2'")
            // A tag is the position in hexadecimal, unique to the record's writes.
            let tag = try await Self.texts(connection, "SELECT change_tag FROM canopy.records WHERE zone_id = \(trips) AND record_name = 'r1'").first ?? nil
            return [try await position("records", "r3"), try await position("records", "r1"), try await position("tombstones", "r2"),
                    try await one("SELECT feed_base FROM canopy.zones WHERE id = \(trips)") - base,
                    (tag.flatMap { Int64($0, radix: 16) } ?? -1) - base * Self.step]
        }
        // r1, r2, r3 in the first transaction (1 to 3 of base + 1); r1 again
        // in the third (base + 2); r2's tombstone in the fourth (base + 3).
        #expect(seen == [Self.step + 3, 2 * Self.step + 1, 3 * Self.step + 1, 3, 2 * Self.step + 1])
    }

    @Test("past 2^20 positions in one transaction the zone takes a new base, and later positions stay above")
    func manyPositionsTakeANewBase() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let seen = try await TestDatabase.withConnection(endpoint) { connection in
            func one(_ sql: String) async throws -> Int64 {
                try await Self.number(connection, sql)
            }
            func run(_ sql: String) async throws {
                try await Self.run(connection, sql)
            }
            try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Big')")
            try await run("SELECT set_config('canopy.user_id', '\(alice.id)', false)")
            let zone = try await one("SELECT id FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Big'")
            let base = try await one("SELECT feed_base FROM canopy.zones WHERE id = \(zone)")
            try await run("BEGIN")
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(zone), 'first', 'Item')")
            // As if the transaction had written 2^20 - 2 records more.
            try await run("SELECT set_config('canopy.zone_position_\(zone)', ((feed_base << 20) + \(Self.step - 1))::text, true) FROM canopy.zones WHERE id = \(zone)")
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(zone), 'last', 'Item')")
            try await run("COMMIT")
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(zone), 'later', 'Item')")
            return try await ["first", "last", "later"].asyncMap { name in
                try await one("SELECT change_seq FROM canopy.records WHERE zone_id = \(zone) AND record_name = '\(name)'") - base * Self.step
            }
        }
        #expect(seen == [Self.step + 1, 2 * Self.step + 1, 3 * Self.step + 1])
    }

    @Test("a record moved into a zone of lower positions gets a position above its last: its change tags never repeat")
    func movedRecordsTagsGrow() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (before, after, destinationBase) = try await TestDatabase.withConnection(endpoint) { connection in
            func one(_ sql: String) async throws -> Int64 {
                try await Self.number(connection, sql)
            }
            func run(_ sql: String) async throws {
                try await Self.run(connection, sql)
            }
            try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Busy'), (\(alice.id), 'Quiet')")
            try await run("SELECT set_config('canopy.user_id', '\(alice.id)', false)")
            let busy = try await one("SELECT id FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Busy'")
            let quiet = try await one("SELECT id FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Quiet'")
            // Busy's positions far above Quiet's, as a zone written a thousand times more.
            try await run("UPDATE canopy.zones SET feed_base = feed_base + 1000 WHERE id = \(busy)")
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(busy), 'trip', 'Item')")
            let before = try await one("SELECT change_seq FROM canopy.records WHERE record_name = 'trip'")
            let refused = try await Self.texts(connection, "SELECT count(*)::text FROM canopy.move_records(\(busy), \(quiet), ARRAY['trip'], false, NULL) WHERE code IS NOT NULL")
            try #require(refused == ["0"], "the move is refused: \(refused)")
            return (before, try await one("SELECT change_seq FROM canopy.records WHERE record_name = 'trip' AND zone_id = \(quiet)"),
                    try await one("SELECT feed_base FROM canopy.zones WHERE id = \(quiet)"))
        }
        #expect(after > before)
        #expect(after == destinationBase * Self.step + 1, "the destination took a new base above the record's last position")
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async throws -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
