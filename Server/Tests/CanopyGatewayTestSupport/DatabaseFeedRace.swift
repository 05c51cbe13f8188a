import CanopyTestSupport
import HummingbirdTesting
import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import Testing

/// The race the database feed must survive (DECISIONS 149, 173), on one
/// PostgreSQL and on Citus: writers save into many zones of one owner,
/// some holding their transaction open after the write, one in five
/// rolling back, while a reader syncs as a client does:
/// `databaseChanges` from token to token, and each zone it names followed
/// by `zoneChanges`. A change the database feed skips is lost to the
/// reader unless a later change to the same zone brings the zone back, so
/// there are many zones and few writes to each. At the end the reader must
/// hold exactly the committed records.
///
/// With the owner's clock moved on when a record is written rather than at
/// commit (the deferred trigger made immediate), this fails: a transaction
/// held open commits a position below one the reader's token passed.
enum DatabaseFeedRace {
    static let zones = 24
    static let writers = 6
    static let transactionsPerWriter = 20

    /// What the run saw, for the suites' expectations.
    struct Outcome: Sendable {
        var committed: Set<String>
        var rolledBack: Set<String>
        var received: [String: Int]
        var databasePages: Int
    }

    static func run(_ harness: GatewayHarness, client: any TestClientProtocol) async throws -> Outcome {
        let alice = harness.alice
        let onCitus = harness.engine == .citus
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        let names = (0..<zones).map { "Feed\($0)" }
        for name in names {
            let saved = try await client.call("saveZone", "mutation { saveZone(zoneName: \"\(name)\") { zoneName } }", token: harness.aliceToken)
            #expect(saved.object["zoneName"] as? String == name, "\(saved.body)")
        }
        let zoneIDs: [String: Int64] = try await TestDatabase.withConnection(harness.endpoint) { connection in
            var ids: [String: Int64] = [:]
            let rows = try await connection.query("SELECT name, id FROM canopy.zones WHERE owner_id = \(alice.id)", logger: TestDatabase.logger)
            for try await (name, id) in rows.decode((String, Int64).self) { ids[name] = id }
            return ids
        }
        // The reader starts from the zones as they are: empty.
        var databaseToken = try await client.databaseChanges(scope: "PRIVATE", since: nil, limit: 400, token: harness.aliceToken).token
        #expect(!databaseToken.isEmpty)

        let committed = NIOLockedValueBox<Set<String>>([])
        let rolledBack = NIOLockedValueBox<Set<String>>([])
        let writersDone = NIOLockedValueBox(false)
        let writersTask = Task {
            defer { writersDone.withLockedValue { $0 = true } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        do {
                        try await TestDatabase.withConnection(gateway) { connection in
                            var random = SystemRandomNumberGenerator()
                            for index in 0..<transactionsPerWriter {
                                let hold = Double(Int.random(in: 0...25, using: &random)) / 1000
                                let rollBack = Int.random(in: 0..<5, using: &random) == 0
                                // One zone a transaction, as a modifyRecords is (two
                                // would deadlock on the owner's storage_usage row).
                                let zone = names.randomElement(using: &random)!
                                let written = (0..<Int.random(in: 1...2, using: &random)).map { part in
                                    (zone: zone, record: "w\(writer)-\(index)-\(part)")
                                }
                                try await connection.query("BEGIN", logger: TestDatabase.logger)
                                if onCitus {
                                    try await connection.query("SELECT canopy.act_as(\(alice.id), NULL, NULL, NULL)", logger: TestDatabase.logger)
                                } else {
                                    try await connection.query("SELECT set_config('canopy.user_id', \(String(alice.id)), true)", logger: TestDatabase.logger)
                                }
                                for (zone, record) in written {
                                    try await connection.query("""
                                        INSERT INTO canopy.records (owner_id, zone_id, record_name, record_type, fields)
                                        VALUES (\(alice.id), \(zoneIDs[zone]!), \(record), 'Item', '{"n": 1}')
                                        """, logger: TestDatabase.logger)
                                }
                                try await connection.query("SELECT pg_sleep(\(hold))", logger: TestDatabase.logger)
                                if rollBack {
                                    try await connection.query("ROLLBACK", logger: TestDatabase.logger)
                                    rolledBack.withLockedValue { $0.formUnion(written.map(\.record)) }
                                } else {
                                    try await connection.query("COMMIT", logger: TestDatabase.logger)
                                    committed.withLockedValue { $0.formUnion(written.map(\.record)) }
                                }
                            }
                        }
                        } catch {
                            throw WriterFailed(message: "writer \(writer): \(String(reflecting: error))")
                        }
                    }
                }
                try await group.waitForAll()
            }
        }

        var received: [String: Int] = [:]
        var zoneTokens: [String: String] = [:]
        var databasePages = 0
        var finalPass = false
        while true {
            // A pass of the database feed, in pages of three zones.
            var named: Set<String> = []
            while true {
                let page = try await client.databaseChanges(scope: "PRIVATE", since: databaseToken, limit: 3, token: harness.aliceToken)
                try #require(!page.token.isEmpty, "\(page.answer.body)")
                named.formUnion(page.changed)
                databaseToken = page.token
                databasePages += 1
                if !page.more { break }
            }
            // Each zone named, followed to its end.
            for zone in named.sorted() {
                while true {
                    let (page, answer) = try await client.zoneChanges(zone, since: zoneTokens[zone], limit: 50, token: harness.aliceToken)
                    let current = try #require(page, "\(answer.body)")
                    for name in current.changed { received[name, default: 0] += 1 }
                    zoneTokens[zone] = current.token
                    if !current.moreComing { break }
                }
            }
            if finalPass { break }
            if writersDone.withLockedValue({ $0 }) {
                finalPass = true   // one more pass after the last commit
                continue
            }
            try await Task.sleep(for: .milliseconds(3))
        }
        try await writersTask.value
        return Outcome(committed: committed.withLockedValue { $0 }, rolledBack: rolledBack.withLockedValue { $0 },
                       received: received, databasePages: databasePages)
    }

    struct WriterFailed: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// The expectations both engines' suites hold the outcome to.
    static func check(_ outcome: Outcome) {
        let missing = outcome.committed.subtracting(outcome.received.keys)
        #expect(missing.isEmpty, "the database feed skipped zones: \(missing.count) committed records never reached the reader: \(missing.sorted().prefix(10))")
        #expect(outcome.rolledBack.intersection(outcome.received.keys).isEmpty, "rolled-back records reached the reader")
        #expect(outcome.received.values.allSatisfy { $0 == 1 }, "each record (written once) arrives once")
        #expect(outcome.committed.count > writers * transactionsPerWriter / 2, "most transactions committed (\(outcome.committed.count))")
        #expect(outcome.databasePages > writers, "the reader followed the feed while writers wrote (\(outcome.databasePages) pages)")
    }
}
