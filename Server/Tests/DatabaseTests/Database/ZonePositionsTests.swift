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

    @Test("each transaction writing a zone takes the zone's next base and counts on from it; another zone's writes leave it alone")
    func positionsFollowTheBase() async throws {
        let seen = try await Self.asAlice(zones: ["Trips", "Notes"]) { alice in
            let (trips, notes) = (try await alice.zone("Trips"), try await alice.zone("Notes"))
            let base = try await alice.number("SELECT feed_base FROM canopy.zones WHERE id = \(trips)")
            func position(_ table: String, _ name: String) async throws -> Int64 {
                try await alice.number("SELECT max(change_seq) FROM canopy.\(table) WHERE zone_id = \(trips) AND record_name = '\(name)'") - base * Self.step
            }
            try await alice.run("BEGIN")
            try await alice.run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(trips), 'r1', 'Item'), (\(trips), 'r2', 'Item')")
            try await alice.run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(trips), 'r3', 'Item')")
            try await alice.run("COMMIT")
            try await alice.run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(notes), 'n1', 'Item')")
            try await alice.run("UPDATE canopy.records SET fields = '{\"n\": 1}' WHERE zone_id = \(trips) AND record_name = 'r1'")
            try await alice.run("DELETE FROM canopy.records WHERE zone_id = \(trips) AND record_name = 'r2'")
            // A tag is the position in hexadecimal, unique to the record's writes.
            let tag = try await alice.texts("SELECT change_tag FROM canopy.records WHERE zone_id = \(trips) AND record_name = 'r1'").first ?? nil
            return [try await position("records", "r3"), try await position("records", "r1"), try await position("tombstones", "r2"),
                    try await alice.number("SELECT feed_base FROM canopy.zones WHERE id = \(trips)") - base,
                    (tag.flatMap { Int64($0, radix: 16) } ?? -1) - base * Self.step]
        }
        // r1, r2, r3 in the first transaction (1 to 3 of base + 1); r1 again
        // in the third (base + 2); r2's tombstone in the fourth (base + 3).
        #expect(seen == [Self.step + 3, 2 * Self.step + 1, 3 * Self.step + 1, 3, 2 * Self.step + 1])
    }

    @Test("past 2^20 positions in one transaction the zone takes a new base, and later positions stay above")
    func manyPositionsTakeANewBase() async throws {
        let seen = try await Self.asAlice(zones: ["Big"]) { alice in
            let zone = try await alice.zone("Big")
            let base = try await alice.number("SELECT feed_base FROM canopy.zones WHERE id = \(zone)")
            try await alice.run("BEGIN")
            try await alice.run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(zone), 'first', 'Item')")
            // As if the transaction had written 2^20 - 2 records more.
            try await alice.run("SELECT set_config('canopy.zone_position_\(zone)', ((feed_base << 20) + \(Self.step - 1))::text, true) FROM canopy.zones WHERE id = \(zone)")
            try await alice.run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(zone), 'last', 'Item')")
            try await alice.run("COMMIT")
            try await alice.run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(zone), 'later', 'Item')")
            var seen: [Int64] = []
            for name in ["first", "last", "later"] {
                seen.append(try await alice.number("SELECT change_seq FROM canopy.records WHERE zone_id = \(zone) AND record_name = '\(name)'") - base * Self.step)
            }
            return seen
        }
        #expect(seen == [Self.step + 1, 2 * Self.step + 1, 3 * Self.step + 1])
    }

    @Test("a record moved into a zone of lower positions gets a position above its last: its change tags never repeat")
    func movedRecordsTagsGrow() async throws {
        let (before, after, destinationBase) = try await Self.asAlice(zones: ["Busy", "Quiet"]) { alice in
            let (busy, quiet) = (try await alice.zone("Busy"), try await alice.zone("Quiet"))
            // Busy's positions far above Quiet's, as a zone written a thousand times more.
            try await alice.run("UPDATE canopy.zones SET feed_base = feed_base + 1000 WHERE id = \(busy)")
            try await alice.run("INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(busy), 'trip', 'Item')")
            let before = try await alice.number("SELECT change_seq FROM canopy.records WHERE record_name = 'trip'")
            let refused = try await alice.texts("SELECT count(*)::text FROM canopy.move_records(\(busy), \(quiet), ARRAY['trip'], false, NULL) WHERE code IS NOT NULL")
            try #require(refused == ["0"], "the move is refused: \(refused)")
            return (before, try await alice.number("SELECT change_seq FROM canopy.records WHERE record_name = 'trip' AND zone_id = \(quiet)"),
                    try await alice.number("SELECT feed_base FROM canopy.zones WHERE id = \(quiet)"))
        }
        #expect(after > before)
        #expect(after == destinationBase * Self.step + 1, "the destination took a new base above the record's last position")
    }

    /// A fresh database where alice owns `zones`, and a connection acting as her.
    private static func asAlice<T: Sendable>(zones: [String], _ body: (Session) async throws -> T) async throws -> T {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        return try await TestDatabase.withConnection(endpoint) { connection in
            let session = Session(connection: connection, owner: alice.id)
            for zone in zones {
                try await session.run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), '\(zone)')")
            }
            try await session.run("SELECT set_config('canopy.user_id', '\(alice.id)', false)")
            return try await body(session)
        }
    }

    /// Statements on one connection; an error names the statement and what the server said.
    private struct Session {
        let connection: PostgresConnection
        let owner: Int64

        func texts(_ sql: String) async throws -> [String?] {
            do {
                return try await connection.texts(PostgresQuery(unsafeSQL: sql))
            } catch let error as PSQLError {
                Issue.record("\(sql): \(error.serverInfo?[.message] ?? String(reflecting: error))")
                throw error
            }
        }

        func run(_ sql: String) async throws {
            _ = try await texts(sql)
        }

        /// The one number `sql` answers; -1 for none, so a failure shows what was found.
        func number(_ sql: String) async throws -> Int64 {
            try await texts("SELECT n::text FROM (\(sql)) answer(n)").first.flatMap { $0.flatMap { Int64($0) } } ?? -1
        }

        func zone(_ name: String) async throws -> Int64 {
            try await number("SELECT id FROM canopy.zones WHERE owner_id = \(owner) AND name = '\(name)'")
        }
    }
}
