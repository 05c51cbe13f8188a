@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import NIOConcurrencyHelpers
import PostgresNIO
import Testing

/// The race a change feed must survive: transactions draw change
/// positions in one order and commit in another. Eight writers save into
/// one zone, some holding their transaction open after the write, some
/// rolling back, while a reader follows `zoneChanges` from token to token.
/// At the end the reader must hold exactly the committed records.
///
/// With positions drawn without the zone lock (the naive `seq > last`
/// design), this test fails within a run: see docs/CHANGE_FEEDS.md.
@Suite("Change feeds under concurrent writers")
struct ChangeFeedRaceTests {
    static let writers = 8
    static let transactionsPerWriter = 30

    @Test("eight writers committing out of order, some rolling back: the reader following tokens gets every committed record and nothing else")
    func followTheFeedUnderRacingWriters() async throws {
        let harness = try await GatewayHarness.make()
        let alice = harness.alice
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Race\") { zoneName } }", token: harness.aliceToken)
            let zoneID = try await TestDatabase.withConnection(harness.endpoint) { connection in
                try await connection.texts("SELECT id::text FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Race'")[0]!
            }
            let committed = NIOLockedValueBox<Set<String>>([])
            let rolledBack = NIOLockedValueBox<Set<String>>([])
            let writersDone = NIOLockedValueBox(false)

            let writersTask = Task {
                defer { writersDone.withLockedValue { $0 = true } }
                try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<Self.writers {
                    group.addTask {
                        try await TestDatabase.withConnection(gateway) { connection in
                            var random = SystemRandomNumberGenerator()
                            for index in 0..<Self.transactionsPerWriter {
                                let name = "w\(writer)-\(index)"
                                // Some transactions wait before writing, some hold the
                                // write open for a while, one in five rolls back.
                                let before = Double(Int.random(in: 0...5, using: &random)) / 1000
                                let hold = Double(Int.random(in: 0...20, using: &random)) / 1000
                                let rollBack = Int.random(in: 0..<5, using: &random) == 0
                                try await connection.query("BEGIN", logger: TestDatabase.logger)
                                // By act_as, the row with its owner: Citus carries SET
                                // LOCAL to its workers, not set_config, and routes a row
                                // by its owner (the citus-gateway tier runs this too).
                                try await connection.query("SELECT canopy.act_as(\(alice.id), NULL, NULL, NULL), pg_sleep(\(before))", logger: TestDatabase.logger)
                                try await connection.query("""
                                    INSERT INTO canopy.records (owner_id, zone_id, record_name, record_type, fields)
                                    VALUES (\(alice.id), \(Int64(zoneID)!), \(name), 'Item', '{"n": 1}')
                                    """, logger: TestDatabase.logger)
                                try await connection.query("SELECT pg_sleep(\(hold))", logger: TestDatabase.logger)
                                if rollBack {
                                    try await connection.query("ROLLBACK", logger: TestDatabase.logger)
                                    rolledBack.withLockedValue { _ = $0.insert(name) }
                                } else {
                                    try await connection.query("COMMIT", logger: TestDatabase.logger)
                                    committed.withLockedValue { _ = $0.insert(name) }
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
                }
            }
            do {
                // The reader, concurrently with the writers.
                var seen: [String: Int] = [:]
                var token: String?
                var pages = 0
                var finalPass = false
                while true {
                    let (page, answer) = try await client.zoneChanges("Race", since: token, limit: 7, token: harness.aliceToken)
                    let current = try #require(page, "\(answer.body)")
                    #expect(Set(current.changed).count == current.changed.count, "a record at most once per page")
                    for name in current.changed { seen[name, default: 0] += 1 }
                    token = current.token
                    pages += 1
                    if current.moreComing { continue }
                    if finalPass { break }
                    if writersDone.withLockedValue({ $0 }) {
                        finalPass = true   // one more pass after the last commit
                        continue
                    }
                    try await Task.sleep(for: .milliseconds(2))
                }
                try await writersTask.value
                let expected = committed.withLockedValue { $0 }
                let unwanted = rolledBack.withLockedValue { $0 }
                #expect(expected.count + unwanted.count == Self.writers * Self.transactionsPerWriter)
                let missing = expected.subtracting(seen.keys)
                #expect(missing.isEmpty, "the feed skipped \(missing.count) committed records: \(missing.sorted().prefix(10))")
                #expect(unwanted.intersection(seen.keys).isEmpty, "rolled-back records reached the reader")
                #expect(seen.values.allSatisfy { $0 == 1 }, "each record (written once) arrives once")
                #expect(pages > Self.writers, "the reader followed the feed while writers wrote (\(pages) pages)")
            }
        }
    }

    @Test("six writers over 24 zones committing out of order: a reader syncing by databaseChanges, then zoneChanges of each zone named, gets every committed record")
    func followTheDatabaseFeedUnderRacingWriters() async throws {
        let harness = try await GatewayHarness.make()
        let outcome = try await harness.test { client in try await DatabaseFeedRace.run(harness, client: client) }
        DatabaseFeedRace.check(outcome)
    }

    @Test("two batches saving the same records in opposite orders never deadlock")
    func oppositeOrders() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, [fast("a", hours: 1, end: 1), fast("b", hours: 2, end: 2)])
            let failures = try await withThrowingTaskGroup(of: [String].self) { group in
                for order in [["a", "b"], ["b", "a"]] {
                    group.addTask {
                        var codes: [String] = []
                        for round in 0..<60 {
                            let answer = try await client.call("modifyRecords", """
                                mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Fasting"}, save: $s, savePolicy: ALL_KEYS) { errors { code message } } }
                                """, ["s": order.map { fast($0, hours: round, end: 1) }], token: alice)
                            codes += (answer.object["errors"] as? [[String: Any]] ?? []).map { "\($0)" }
                            if let code = answer.code { codes.append(code) }
                        }
                        return codes
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(failures.isEmpty, "\(failures.prefix(3))")
        }
    }
}
