@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyPlanner
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOConcurrencyHelpers
import PostgresNIO
import Testing

/// `zoneRanges`: a first sync read in parallel ranges, then the feed from
/// the ranges' position (docs/CHANGE_FEEDS.md, "A first sync in ranges").
/// The property guarded: ranges then tail equal the zone, whatever
/// writers do meanwhile.
@Suite("A first sync in ranges")
struct ChangeFeedRangesTests {
    @Test("the ranges cover the zone once, nearly equal; a range's last token is the position, which reports later saves")
    func rangesCoverTheZone() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Big\") { zoneName } }", token: alice)
            for batch in 0..<5 {
                _ = try await save(client, token: alice, zone: "Big", (0..<400).map { fast("r\(batch * 400 + $0)", hours: $0, end: Int64($0)) })
            }
            let cut = try await client.zoneRanges("Big", count: 8, token: alice)
            #expect(cut.ranges.count == 8, "\(cut)")
            var seen: [String] = []
            var lastTokens: [String] = []
            for range in cut.ranges {
                let (pages, last) = try await client.readRange("Big", range, limit: 50, token: alice)
                #expect(pages.allSatisfy { $0.deleted.isEmpty })
                let names = pages.flatMap(\.changed)
                #expect((249...251).contains(names.count), "a range of nearly 2000 / 8 records, got \(names.count)")
                seen += names
                lastTokens.append(last)
            }
            #expect(seen.count == 2000 && Set(seen) == Set((0..<2000).map { "r\($0)" }), "every record once")

            // Each range's last token and the position report a save made now, and only it.
            _ = try await save(client, token: alice, zone: "Big", [fast("new", hours: 1, end: 1)])
            for token in [cut.position, lastTokens[0], lastTokens[7]] {
                let (page, answer) = try await client.zoneChanges("Big", since: token, token: alice)
                #expect(page?.changed == ["new"] && page?.deleted == [] && page?.moreComing == false, "\(answer.body)")
            }
            // A small zone of one's own is one range; count is checked.
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Small\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Small", [fast("a", hours: 1, end: 1)])
            let small = try await client.zoneRanges("Small", count: 8, token: alice)
            #expect(small.ranges.count == 1)
            for bad in [0, 65] {
                let answer = try await client.call("zoneRanges", "{ zoneRanges(scope: PRIVATE, zone: {zoneName: \"Big\"}, count: \(bad)) { position } }", token: alice)
                #expect(answer.code == "INVALID_ARGUMENTS" && answer.message.contains("count must be 1-64"), "\(answer.body)")
            }
        }
    }

    @Test("writers update, delete, re-create and add records during the ranged reads; ranges then the tail equal the zone", arguments: [1, 2, 3])
    func exactUnderWriters(seed: Int) async throws {
        let harness = try await GatewayHarness.make()
        let alice = harness.alice
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Churn\") { zoneName } }", token: token)
            for batch in 0..<3 {
                _ = try await save(client, token: token, zone: "Churn", (0..<400).map { fast("r\(batch * 400 + $0)", hours: $0, end: Int64($0)) })
            }
            let zoneID = try await TestDatabase.withConnection(harness.endpoint) { connection in
                Int64(try await connection.texts("SELECT id::text FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Churn'")[0]!)!
            }
            let cut = try await client.zoneRanges("Churn", count: 8, token: token)
            let writing = NIOLockedValueBox(true)

            // Four writers, as the gateway role under alice: update, delete,
            // re-create, add; some hold their transaction, one in five rolls back.
            let writers = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<4 {
                        group.addTask {
                            var random = SeededGenerator(state: UInt64(seed * 100 + writer))
                            try await TestDatabase.withConnection(gateway) { connection in
                                for step in 0..<60 {
                                    let name = "r\(Int.random(in: 0..<1300, using: &random))"
                                    let hold = Double(Int.random(in: 0...10, using: &random)) / 1000
                                    try await connection.query("BEGIN", logger: TestDatabase.logger)
                                    // By act_as and with the owner's id: Citus carries SET
                                    // LOCAL to its workers (not set_config) and routes a
                                    // row by its owner (the citus-gateway tier).
                                    try await connection.query("SELECT canopy.act_as(\(alice.id), NULL, NULL, NULL)", logger: TestDatabase.logger)
                                    // Raw statements in any order can deadlock (a DELETE
                                    // holds the record and waits for the zone; an upsert
                                    // the reverse): PostgreSQL rolls one back, a
                                    // transaction that did not happen, as a ROLLBACK.
                                    do {
                                    switch Int.random(in: 0..<4, using: &random) {
                                    case 0:
                                        try await connection.query("DELETE FROM canopy.records WHERE owner_id = \(alice.id) AND zone_id = \(zoneID) AND record_name = \(name)", logger: TestDatabase.logger)
                                    case 1:
                                        let added = "w\(writer)-\(step)"
                                        try await connection.query("""
                                            INSERT INTO canopy.records (owner_id, zone_id, record_name, record_type, fields) VALUES (\(alice.id), \(zoneID), \(added), 'Fast', '{"hours": 1}')
                                            """, logger: TestDatabase.logger)
                                    default:
                                        // Updated, or created again when it was deleted.
                                        try await connection.query("""
                                            INSERT INTO canopy.records (owner_id, zone_id, record_name, record_type, fields) VALUES (\(alice.id), \(zoneID), \(name), 'Fast', '{"hours": 2}')
                                            ON CONFLICT (zone_id, record_name, owner_id) DO UPDATE SET fields = \("{\"hours\": \(step)}")::jsonb
                                            """, logger: TestDatabase.logger)
                                    }
                                    try await connection.query("SELECT pg_sleep(\(hold))", logger: TestDatabase.logger)
                                    try await connection.query(Int.random(in: 0..<5, using: &random) == 0 ? "ROLLBACK" : "COMMIT", logger: TestDatabase.logger)
                                    } catch let error as PSQLError where error.serverInfo?[.sqlState] == "40P01" {
                                        try await connection.query("ROLLBACK", logger: TestDatabase.logger)
                                    }
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                writing.withLockedValue { $0 = false }
            }

            // Eight readers, one a range, small pages, while the writers run.
            let copy = NIOLockedValueBox<[String: String]>([:])
            let duplicates = NIOLockedValueBox(0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for range in cut.ranges {
                    group.addTask {
                        var since: String? = range
                        while let current = since {
                            let page = try await client.versionedPage("Churn", since: current, limit: 7, token: token)
                            #expect(page.deleted.isEmpty, "a range reports no deletions")
                            copy.withLockedValue { copy in
                                for (name, tag) in page.changed {
                                    if copy.updateValue(tag, forKey: name) != nil { duplicates.withLockedValue { $0 += 1 } }
                                }
                            }
                            since = page.moreComing ? page.token : nil
                        }
                    }
                }
                try await group.waitForAll()
            }
            try await writers.value
            #expect(duplicates.withLockedValue { $0 } == 0, "the ranges are disjoint")
            // The tail, after every range, until the writers are done and it is empty.
            var since = cut.position
            var local = copy.withLockedValue { $0 }
            while true {
                let page = try await client.versionedPage("Churn", since: since, limit: 50, token: token)
                for (name, tag) in page.changed { local[name] = tag }
                for name in page.deleted { local[name] = nil }
                since = page.token
                if !page.moreComing && !writing.withLockedValue({ $0 }) { break }
            }
            let server = try await TestDatabase.withConnection(harness.endpoint) { connection in
                try await connection.texts("SELECT record_name || ' ' || change_tag FROM canopy.records WHERE zone_id = \(zoneID)")
            }
            let expected = Dictionary(uniqueKeysWithValues: server.map { line in
                let parts = line!.split(separator: " ", maxSplits: 1).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            })
            #expect(local.count == expected.count)
            #expect(local == expected, "differs: \(Set(local.keys).symmetricDifference(expected.keys).sorted().prefix(10)), versions \(local.filter { expected[$0.key] != nil && expected[$0.key] != $0.value }.keys.sorted().prefix(10))")
        }
    }

    @Test("range tokens: forged or another user's are INVALID_ARGUMENTS, as is one given to changes/zone; a zone made again expires them; strangers get ZONE_NOT_FOUND")
    func tokens() async throws {
        let harness = try await GatewayHarness.make()
        let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration()) { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, (0..<300).map { fast("f\($0)", hours: $0, end: Int64($0)) })
            let cut = try await client.zoneRanges("Fasting", count: 3, token: alice)
            #expect(cut.ranges.count == 3)
            let range = cut.ranges[1]

            var edited = Array(range)
            let index = edited.index(edited.startIndex, offsetBy: range.count / 2)
            edited[index] = edited[index] == "A" ? "B" : "A"
            let (_, forged) = try await client.zoneChanges("Fasting", since: String(edited), token: alice)
            #expect(forged.code == "INVALID_ARGUMENTS", "\(forged.body)")
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: bob)
            let (_, borrowed) = try await client.zoneChanges("Fasting", since: range, token: bob)
            #expect(borrowed.code == "INVALID_ARGUMENTS", "\(borrowed.body)")
            let webServices = try await client.webServices(
                "private/changes/zone", #"{"zones": [{"zoneID": {"zoneName": "Fasting"}, "syncToken": "\#(range)"}]}"#,
                apiToken: apiToken, webAuthToken: alice)
            #expect(webServices.zones.first?["serverErrorCode"] as? String == "BAD_REQUEST", "\(webServices.body)")
            #expect((webServices.zones.first?["reason"] as? String)?.contains("range token") == true, "\(webServices.body)")

            let stranger = try await client.call("zoneRanges", "{ zoneRanges(scope: PRIVATE, zone: {zoneName: \"Nowhere\"}) { position ranges } }", token: alice)
            #expect(stranger.code == "ZONE_NOT_FOUND", "\(stranger.body)")

            _ = try await client.call("deleteZone", "mutation { deleteZone(scope: PRIVATE, zone: {zoneName: \"Fasting\"}) }", token: alice)
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
            let (_, expired) = try await client.zoneChanges("Fasting", since: range, token: alice)
            #expect(expired.code == "CHANGE_TOKEN_EXPIRED", "\(expired.body)")
        }
    }

    @Test("a record-rooted participant: exactly count ranges whatever the zone's size, whose union is what their feed shows")
    func participant() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Contacts\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Contacts",
                               [contact("group", name: "Friends")] + (0..<30).map { contact("in\($0)", name: "In", parent: "group") }
                                 + (0..<30).map { contact("out\($0)", name: "Out") })
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Contacts", rootRecordName: "group", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_ONLY}]) { url } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: bob)
            let owner = harness.alice.userRecordName
            let cut = try await client.zoneRanges("Contacts", scope: "SHARED", owner: owner, count: 16, token: bob)
            #expect(cut.ranges.count == 16, "a participant's answer does not depend on the zone's size")
            var seen: [String] = []
            for range in cut.ranges {
                seen += try await client.readRange("Contacts", range, scope: "SHARED", owner: owner, limit: 10, token: bob).pages.flatMap(\.changed)
            }
            let (feed, _) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: nil, token: bob)
            #expect(seen.count == 31 && Set(seen) == Set(feed?.changed ?? []), "\(seen.sorted())")
        }
    }

    @Test("in a zone of 20,000 records: a range page reads about limit index entries, and the cuts split the zone evenly")
    func costOfARange() async throws {
        let harness = try await GatewayHarness.make()
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.query("INSERT INTO canopy.zones (owner_id, name) VALUES (\(harness.alice.id), 'Big')", logger: TestDatabase.logger)
            try await connection.query("""
                INSERT INTO canopy.records (zone_id, record_name, record_type, fields)
                SELECT z.id, 'r' || g, 'Item', jsonb_build_object('n', g) FROM canopy.zones z, generate_series(1, 20000) g
                 WHERE z.owner_id = \(harness.alice.id) AND z.name = 'Big'
                """, logger: TestDatabase.logger)
            try await connection.query("ANALYZE canopy.records", logger: TestDatabase.logger)
        }
        let secret = SigningKey(Data(repeating: 7, count: 32))
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        let (plan, changed, sizes) = try await TestDatabase.withConnection(gateway) { connection in
            try await connection.asUser(harness.alice.id) { connection in
                let zoneID = Int64(try await connection.texts("SELECT id::text FROM canopy.zones WHERE owner_id = \(harness.alice.id) AND name = 'Big'")[0]!)!
                // The cuts, as the gateway asks for them: 8 ranges of 2,500.
                let head = Int64(try await connection.texts("SELECT canopy.zone_feed_position(\(zoneID))::text")[0]!)!
                let cuts = try await connection.texts("SELECT unnest(canopy.zone_range_cuts(\(zoneID), \(head), 8, 0))::text").map { Int64($0!)! }
                let bounds = [0] + cuts + [head]
                var sizes: [Int] = []
                for (low, high) in zip(bounds, bounds.dropFirst()) {
                    sizes.append(Int(try await connection.texts("SELECT count(*)::text FROM canopy.records WHERE zone_id = \(zoneID) AND change_seq > \(low) AND change_seq <= \(high)")[0]!)!)
                }
                // A page of the fourth range, from its middle.
                let token = ChangeToken.zone(.init(
                    user: harness.alice.id, scope: "PRIVATE", zoneID: zoneID, zoneName: "Big", after: bounds[3] + 1000, floor: head, until: bounds[4]
                )).encoded(secret: secret)
                let request = try ParsedRequest(query: """
                    { zoneChanges(scope: PRIVATE, zone: {zoneName: "Big"}, since: "\(token)", limit: 100) { changed { recordName } deleted { recordName } token moreComing } }
                    """)
                let statement = try ZoneChangesPlan(try request.rootFields()[0], request: request, userID: harness.alice.id, secret: secret).statement.bindingCaller(harness.alice.id)
                let plan = try await connection.texts(PostgresQuery(
                    unsafeSQL: "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) \(statement.sql)", binds: statement.binds
                )).compactMap { $0 }.joined(separator: "\n")
                var changed: String?
                for try await row in try await connection.query(statement.postgresQuery, logger: TestDatabase.logger) {
                    changed = try row.decode((Int64?, Int64?, Int64?, Int64?, String?, String?, Int64?, Bool?).self).4
                }
                return (plan, changed ?? "", sizes)
            }
        }
        #expect(sizes.count == 8 && sizes.allSatisfy { (2499...2501).contains($0) } && sizes.reduce(0, +) == 20000, "\(sizes)")
        #expect(changed.components(separatedBy: "recordName").count - 1 == 100, "\(changed.prefix(200))")
        let scanned = plan.split(separator: "\n").first { $0.contains("records_zone_change_idx") }.flatMap { line in
            line.range(of: #"rows=(\d+)"#, options: .regularExpression).map { Int(line[$0].dropFirst(5))! }
        }
        #expect((scanned ?? .max) <= 101, "a range page stops after limit + 1 index entries: \(plan)")
    }
}

/// What `zoneRanges` answered.
struct ZoneCut {
    var position: String
    var ranges: [String]
}

/// A feed page with each changed record's change tag.
struct VersionedPage {
    var changed: [(String, String)]
    var deleted: [String]
    var token: String
    var moreComing: Bool
}

extension TestClientProtocol {
    func zoneRanges(_ zone: String, scope: String = "PRIVATE", owner: String? = nil, count: Int, token: String) async throws -> ZoneCut {
        let ownerPart = owner.map { ", ownerName: \"\($0)\"" } ?? ""
        let answer = try await call("zoneRanges", """
            { zoneRanges(scope: \(scope), zone: {zoneName: "\(zone)"\(ownerPart)}, count: \(count)) { position ranges } }
            """, token: token)
        let position = try #require(answer.object["position"] as? String, "\(answer.body)")
        return ZoneCut(position: position, ranges: answer.object["ranges"] as? [String] ?? [])
    }

    /// Every page of one range; the last page's token.
    func readRange(_ zone: String, _ range: String, scope: String = "PRIVATE", owner: String? = nil, limit: Int, token: String) async throws -> (pages: [ZonePage], last: String) {
        var pages: [ZonePage] = []
        var since = range
        while true {
            let (page, answer) = try await zoneChanges(zone, scope: scope, owner: owner, since: since, limit: limit, token: token)
            let current = try #require(page, "\(answer.body)")
            pages.append(current)
            since = current.token
            if !current.moreComing || pages.count > 1000 { return (pages, since) }
        }
    }

    func versionedPage(_ zone: String, since: String?, limit: Int, token: String) async throws -> VersionedPage {
        let answer = try await call("zoneChanges", """
            query($since: String, $limit: Int) { zoneChanges(scope: PRIVATE, zone: {zoneName: "\(zone)"}, since: $since, limit: $limit) {
              changed { recordName recordChangeTag } deleted { recordName } token moreComing } }
            """, ["since": since as Any? ?? NSNull(), "limit": limit], token: token)
        let next = try #require(answer.object["token"] as? String, "\(answer.body)")
        return VersionedPage(
            changed: (answer.object["changed"] as? [[String: Any]] ?? []).compactMap {
                guard let name = $0["recordName"] as? String, let tag = $0["recordChangeTag"] as? String else { return nil }
                return (name, tag)
            },
            deleted: (answer.object["deleted"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String },
            token: next, moreComing: answer.object["moreComing"] as? Bool ?? false
        )
    }
}
