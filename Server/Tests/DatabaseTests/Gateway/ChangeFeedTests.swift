@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyPlanner
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Testing


/// zoneChanges and databaseChanges through `/graphql`: paging, updates and
/// deletions once each, shared feeds, bad and expired tokens.
@Suite("Change feeds over HTTP")
struct ChangeFeedTests {
    @Test("25 records with limit 10 arrive in three pages, then an empty page; later updates and deletions arrive once each")
    func paging() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
            for batch in stride(from: 1, through: 25, by: 5) {
                _ = try await save(client, token: alice, (batch..<batch + 5).map { fast("f\($0)", hours: $0, end: Int64($0)) })
            }
            var pages: [ZonePage] = []
            var since: String?
            repeat {
                let (page, answer) = try await client.zoneChanges("Fasting", since: since, limit: 10, token: alice)
                let current = try #require(page, "\(answer.body)")
                pages.append(current)
                since = current.token
            } while pages.last!.moreComing && pages.count < 10
            #expect(pages.map(\.changed.count) == [10, 10, 5])
            #expect(pages.map(\.moreComing) == [true, true, false])
            #expect(Set(pages.flatMap(\.changed)) == Set((1...25).map { "f\($0)" }))
            #expect(pages.flatMap(\.changed).count == 25, "each record once")
            #expect(pages.allSatisfy { $0.deleted.isEmpty })
            let (empty, _) = try await client.zoneChanges("Fasting", since: since, limit: 10, token: alice)
            #expect(empty?.changed == [] && empty?.deleted == [] && empty?.moreComing == false)

            // Updates (one record twice), a deletion, an update then a deletion,
            // a deletion then a re-creation.
            _ = try await save(client, token: alice, [fast("f1", hours: 100, end: 1), fast("f2", hours: 100, end: 2)], policy: "ALL_KEYS")
            _ = try await save(client, token: alice, [fast("f1", hours: 101, end: 1), fast("f3", hours: 100, end: 3)], policy: "ALL_KEYS")
            _ = try await client.call("modifyRecords", "mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, delete: [\"f4\", \"f3\", \"f5\"]) { deleted } }", token: alice)
            _ = try await save(client, token: alice, [fast("f5", hours: 5, end: 5)])
            let (after, answer) = try await client.zoneChanges("Fasting", since: empty?.token, limit: 10, token: alice)
            let page = try #require(after, "\(answer.body)")
            #expect(page.changed == ["f2", "f1", "f5"], "in commit order, each once: \(page)")
            #expect(page.deleted == ["f4", "f3"])
            #expect(!page.moreComing)
            #expect(answer.object["deleted"].map { "\($0)" }?.contains("Fast") == true, "tombstones carry the record type")
        }
    }

    @Test("a forged, edited or borrowed token is INVALID_ARGUMENTS; a token older than the kept history is CHANGE_TOKEN_EXPIRED")
    func badTokens() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, [fast("a", hours: 1, end: 1), fast("b", hours: 2, end: 2)])
            let (first, _) = try await client.zoneChanges("Fasting", since: nil, token: alice)
            let token = try #require(first?.token)

            var edited = Array(token)
            let index = edited.index(edited.startIndex, offsetBy: token.count / 2)
            edited[index] = edited[index] == "A" ? "B" : "A"
            for bad in [String(edited), "ct1.e30.AAAA", "not a token", token + "x"] {
                let (_, answer) = try await client.zoneChanges("Fasting", since: bad, token: alice)
                #expect(answer.code == "INVALID_ARGUMENTS", "\(bad): \(answer.body)")
            }
            // Page sizes: 1...400, the fault located at the argument.
            let (_, tooMany) = try await client.zoneChanges("Fasting", since: nil, limit: 401, token: alice)
            #expect(tooMany.code == "LIMIT_EXCEEDED" && tooMany.message.contains("400"))
            let (_, none) = try await client.zoneChanges("Fasting", since: nil, limit: 0, token: alice)
            #expect(none.code == "INVALID_ARGUMENTS" && (firstError(none.body)["locations"] as? [[String: Any]])?.isEmpty == false)
            let databaseTooMany = try await client.databaseChanges(scope: "PRIVATE", since: nil, limit: 401, token: alice)
            #expect(databaseTooMany.answer.code == "LIMIT_EXCEEDED")
            // Bob has a zone of the same name: alice's token is not his.
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: bob)
            let (_, borrowed) = try await client.zoneChanges("Fasting", since: token, token: bob)
            #expect(borrowed.code == "INVALID_ARGUMENTS")
            let (_, otherZone) = try await client.zoneChanges("_defaultZone", since: token, token: alice)
            #expect(otherZone.code == "INVALID_ARGUMENTS")
            let database = try await client.databaseChanges(scope: "PRIVATE", since: nil, token: alice)
            let (_, crossed) = try await client.zoneChanges("Fasting", since: database.token, token: alice)
            #expect(crossed.code == "INVALID_ARGUMENTS", "a database token is not a zone token")
            let shared = try await client.databaseChanges(scope: "SHARED", since: database.token, token: alice)
            #expect(shared.answer.code == "INVALID_ARGUMENTS", "a PRIVATE token is not a SHARED one")

            // A deletion, then the history is purged: the old token expired,
            // a token taken after the deletion did not.
            _ = try await client.call("modifyRecords", "mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, delete: [\"a\"]) { deleted } }", token: alice)
            let (afterDeletion, _) = try await client.zoneChanges("Fasting", since: token, token: alice)
            #expect(afterDeletion?.deleted == ["a"])
            try await purgeHistory(harness)
            let (_, expired) = try await client.zoneChanges("Fasting", since: token, token: alice)
            #expect(expired.code == "CHANGE_TOKEN_EXPIRED", "\(expired.body)")
            let (fresh, _) = try await client.zoneChanges("Fasting", since: afterDeletion?.token, token: alice)
            #expect(fresh?.changed == [] && fresh?.deleted == [])
            let (restart, _) = try await client.zoneChanges("Fasting", since: nil, token: alice)
            #expect(restart?.changed == ["b"])
            // The zone's newest event was the purged deletion: the restart's
            // token must still hold, or a client would refetch forever.
            let (continued, continuedAnswer) = try await client.zoneChanges("Fasting", since: restart?.token, token: alice)
            #expect(continuedAnswer.code == nil && continued?.changed == [] && continued?.deleted == [], "\(continuedAnswer.body)")

            // A zone deleted and created again under the same name is a new feed.
            _ = try await client.call("deleteZone", "mutation { deleteZone(scope: PRIVATE, zone: {zoneName: \"Fasting\"}) }", token: alice)
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
            let (_, recreated) = try await client.zoneChanges("Fasting", since: restart?.token, token: alice)
            #expect(recreated.code == "CHANGE_TOKEN_EXPIRED")

            // Database tokens expire when the departures they need are purged.
            // Before that, the zone made again is both deleted (the old one:
            // drop what you hold of it) and changed (the new one).
            let before = try await client.databaseChanges(scope: "PRIVATE", since: database.token, token: alice)
            #expect(before.changed.contains("Fasting") && before.deleted.contains("Fasting"), "\(before.answer.body)")
            try await purgeHistory(harness)
            let late = try await client.databaseChanges(scope: "PRIVATE", since: database.token, token: alice)
            #expect(late.answer.code == "CHANGE_TOKEN_EXPIRED", "\(late.answer.body)")
            let restarted = try await client.databaseChanges(scope: "PRIVATE", since: nil, token: alice)
            let current = try await client.databaseChanges(scope: "PRIVATE", since: restarted.token, token: alice)
            #expect(current.answer.code == nil && current.changed == [], "\(current.answer.body)")
        }
    }

    @Test("databaseChanges: PRIVATE lists changed and deleted zones; SHARED gains a zone on accept and loses it on removal")
    func databaseFeeds() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            let start = try await client.databaseChanges(scope: "PRIVATE", since: nil, token: alice)
            #expect(start.changed == ["_defaultZone"] && start.deleted == [] && !start.more)
            let quiet = try await client.databaseChanges(scope: "PRIVATE", since: start.token, token: alice)
            #expect(quiet.changed == [] && quiet.deleted == [])

            for name in ["Log", "Trips", "Old"] {
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"\(name)\") { zoneName } }", token: alice)
            }
            let created = try await client.databaseChanges(scope: "PRIVATE", since: quiet.token, limit: 2, token: alice)
            #expect(created.changed == ["Log", "Trips"] && created.more)
            let rest = try await client.databaseChanges(scope: "PRIVATE", since: created.token, limit: 2, token: alice)
            #expect(rest.changed == ["Old"] && !rest.more)
            _ = try await save(client, token: alice, zone: "Trips", [fast("t1", hours: 1, end: 1)])
            _ = try await client.call("deleteZone", "mutation { deleteZone(scope: PRIVATE, zone: {zoneName: \"Old\"}) }", token: alice)
            let changes = try await client.databaseChanges(scope: "PRIVATE", since: rest.token, token: alice)
            #expect(changes.changed == ["Trips"] && changes.deleted == ["Old"], "\(changes.answer.body)")

            // Bob's shared database.
            let bobStart = try await client.databaseChanges(scope: "SHARED", since: nil, token: bob)
            #expect(bobStart.changed == [] && bobStart.deleted == [])
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Log", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_ONLY}]) { url } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            let invited = try await client.databaseChanges(scope: "SHARED", since: bobStart.token, token: bob)
            #expect(invited.changed == [], "an invitation is not access")
            _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: bob)
            let accepted = try await client.databaseChanges(scope: "SHARED", since: invited.token, token: bob)
            #expect(accepted.changed == ["Log"] && accepted.deleted == [], "\(accepted.answer.body)")
            let owners = (accepted.answer.object["changedZones"] as? [[String: Any]])?.compactMap { $0["ownerName"] as? String }
            #expect(owners == [harness.alice.userRecordName])

            _ = try await save(client, token: alice, zone: "Log", [fast("l1", hours: 1, end: 1)])
            let written = try await client.databaseChanges(scope: "SHARED", since: accepted.token, token: bob)
            #expect(written.changed == ["Log"])
            let zone = "Log"
            let (sharedPage, sharedAnswer) = try await client.zoneChanges(zone, scope: "SHARED", owner: harness.alice.userRecordName, since: nil, token: bob)
            #expect(sharedPage?.changed == ["l1"], "\(sharedAnswer.body)")

            _ = try await client.call("removeParticipant", """
                mutation { removeParticipant(zoneName: "Log", userRecordName: "\(harness.bob.userRecordName)") { url } }
                """, token: alice)
            let removed = try await client.databaseChanges(scope: "SHARED", since: written.token, token: bob)
            #expect(removed.changed == [] && removed.deleted == ["Log"], "\(removed.answer.body)")
            let (_, gone) = try await client.zoneChanges(zone, scope: "SHARED", owner: harness.alice.userRecordName, since: sharedPage?.token, token: bob)
            #expect(gone.code == "ZONE_NOT_FOUND")
            // Alice's own feed is unaffected by who left.
            let aliceView = try await client.databaseChanges(scope: "PRIVATE", since: changes.token, token: alice)
            #expect(aliceView.deleted == [])
        }
    }

    @Test("a record-rooted share's feed: records moving out appear deleted to the participant, records moving in appear changed")
    func recordShareFeed() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Contacts\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Contacts", [
                contact("group", name: "Friends"), contact("ann", name: "Ann", parent: "group"),
                contact("ben", name: "Ben", parent: "group"), contact("cat", name: "Cat"),
            ])
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Contacts", rootRecordName: "group", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_WRITE}]) { url } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: bob)
            let owner = harness.alice.userRecordName
            let (ownerStart, _) = try await client.zoneChanges("Contacts", since: nil, token: alice)
            let (initial, answer) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: nil, token: bob)
            let first = try #require(initial, "\(answer.body)")
            #expect(Set(first.changed) == ["group", "ann", "ben"] && first.deleted == [])

            // ben moves out, cat moves in, ann changes, then ben is deleted by alice.
            _ = try await save(client, token: alice, zone: "Contacts", [contact("ben", name: "Ben"), contact("cat", name: "Cat", parent: "group")], policy: "ALL_KEYS")
            let (moved, movedAnswer) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: first.token, token: bob)
            #expect(moved?.changed == ["cat"] && moved?.deleted == ["ben"], "\(movedAnswer.body)")
            // Alice's private feed, from before the moves, shows both as changed, nothing deleted.
            let (own, _) = try await client.zoneChanges("Contacts", since: ownerStart?.token, token: alice)
            #expect(own?.deleted == [] && Set(own?.changed ?? []) == ["ben", "cat"], "\(String(describing: own))")
            _ = try await client.call("modifyRecords", "mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Contacts\"}, delete: [\"ben\"]) { deleted } }", token: alice)
            let (after, _) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: moved?.token, token: bob)
            #expect(after?.changed == [] && after?.deleted == [], "a record outside the share is nobody's business of bob's: \(String(describing: after))")
            // Created again inside the share, it shows as changed.
            _ = try await save(client, token: alice, zone: "Contacts", [contact("ben", name: "Ben", parent: "group")])
            let (back, _) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: after?.token, token: bob)
            #expect(back?.changed == ["ben"] && back?.deleted == [])
        }
    }

    @Test("what a participant sees grows or shrinks: accepting a second share, leaving and rejoining; deletions from before joining stay private")
    func visibilityChanges() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            let owner = harness.alice.userRecordName
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Contacts\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Contacts", [
                contact("g1", name: "One"), contact("a1", name: "A", parent: "g1"),
                contact("g2", name: "Two"), contact("b2", name: "B", parent: "g2"), contact("secret", name: "Layoffs"),
            ])
            _ = try await client.call("modifyRecords", "mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Contacts\"}, delete: [\"secret\"]) { deleted } }", token: alice)
            var urls: [String] = []
            for root in ["g1", "g2"] {
                let share = try await client.call("saveShare", """
                    mutation { saveShare(zoneName: "Contacts", rootRecordName: "\(root)", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_ONLY}]) { url } }
                    """, token: alice)
                urls.append(try #require(share.object["url"] as? String, "\(share.body)"))
            }
            _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(urls[0])\") { status } }", token: bob)
            let (first, _) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: nil, token: bob)
            #expect(Set(first?.changed ?? []) == ["g1", "a1"] && first?.deleted == [], "nothing deleted before bob joined is shown to him")

            // Accepting the second share: records already at old positions
            // become visible, so the old token expires and a fresh sync has them.
            _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(urls[1])\") { status } }", token: bob)
            let (_, stale) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: first?.token, token: bob)
            #expect(stale.code == "CHANGE_TOKEN_EXPIRED", "\(stale.body)")
            let (both, _) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: nil, token: bob)
            #expect(Set(both?.changed ?? []) == ["g1", "a1", "g2", "b2"])
            let (steady, steadyAnswer) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: both?.token, token: bob)
            #expect(steady?.changed == [] && steady?.deleted == [], "\(steadyAnswer.body)")

            // Leaving one share expires tokens too; rejoining after removal
            // gives a sync whose token keeps working.
            _ = try await client.call("leaveShare", "mutation { leaveShare(zone: {zoneName: \"Contacts\", ownerName: \"\(owner)\"}, rootRecordName: \"g2\") }", token: bob)
            let (_, afterLeaving) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: both?.token, token: bob)
            #expect(afterLeaving.code == "CHANGE_TOKEN_EXPIRED")
            _ = try await client.call("setParticipant", """
                mutation { setParticipant(zoneName: "Contacts", rootRecordName: "g2", participant: {userRecordName: "\(harness.bob.userRecordName)", permission: READ_ONLY}) { url } }
                """, token: alice)
            _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(urls[1])\") { status } }", token: bob)
            let (rejoined, _) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: nil, token: bob)
            #expect(Set(rejoined?.changed ?? []) == ["g1", "a1", "g2", "b2"])
            let (next, nextAnswer) = try await client.zoneChanges("Contacts", scope: "SHARED", owner: owner, since: rejoined?.token, token: bob)
            #expect(nextAnswer.code == nil && next?.changed == [], "a fresh sync's token is not expired by the departure before it: \(nextAnswer.body)")
        }
    }

    @Test("a page of changes from a large zone reads about limit rows through the change-position index")
    func costFollowsTheChange() async throws {
        let harness = try await GatewayHarness.make()
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.query("""
                INSERT INTO canopy.zones (owner_id, name) VALUES (\(harness.alice.id), 'Big')
                """, logger: TestDatabase.logger)
            try await connection.query("""
                INSERT INTO canopy.records (zone_id, record_name, record_type, fields)
                SELECT z.id, 'r' || g, 'Item', jsonb_build_object('n', g) FROM canopy.zones z, generate_series(1, 20000) g
                 WHERE z.owner_id = \(harness.alice.id) AND z.name = 'Big'
                """, logger: TestDatabase.logger)
            // Deletions (tombstones) first, then the 100 newest changes are updates.
            try await connection.query("DELETE FROM canopy.records WHERE record_name IN (SELECT 'r' || g FROM generate_series(1, 100) g)", logger: TestDatabase.logger)
            try await connection.query("UPDATE canopy.records SET fields = '{\"n\": 0}' WHERE record_name IN (SELECT 'r' || g FROM generate_series(19901, 20000) g)", logger: TestDatabase.logger)
            // An old history of deletions in the same zone, as a busy zone has.
            try await connection.query("""
                INSERT INTO canopy.tombstones (zone_id, record_name, record_type, change_seq, deleted_at)
                SELECT z.id, 'old' || g, 'Item', g, now() - interval '1 day' FROM canopy.zones z, generate_series(1, 20000) g
                 WHERE z.owner_id = \(harness.alice.id) AND z.name = 'Big'
                """, logger: TestDatabase.logger)
            try await connection.query("ANALYZE canopy.records", logger: TestDatabase.logger)
            try await connection.query("ANALYZE canopy.tombstones", logger: TestDatabase.logger)
        }
        // The statement the gateway runs for "the changes after a position
        // 100 changes from the end", built by the plan the gateway uses.
        let secret = SigningKey(Data(repeating: 7, count: 32))
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        let (plan, changed) = try await TestDatabase.withConnection(gateway) { connection in
            try await connection.asUser(harness.alice.id) { connection in
                let row = try await connection.texts("SELECT (max(change_seq) - 100)::text || ' ' || min(zone_id)::text FROM canopy.records WHERE record_name LIKE 'r%'")[0]!.split(separator: " ")
                let token = ChangeToken.zone(.init(
                    user: harness.alice.id, scope: "PRIVATE", zoneID: Int64(row[1])!, zoneName: "Big", after: Int64(row[0])!, floor: 0
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
                return (plan, changed ?? "")
            }
        }
        #expect(changed.components(separatedBy: "recordName").count - 1 == 100, "\(changed.prefix(200))")
        #expect(plan.contains("Index Scan using records_zone_change_idx"), "\(plan)")
        #expect(plan.contains("tombstones_zone_change_idx"), "\(plan)")
        // Each index scan stops after limit + 1 rows, not 20,000.
        for index in ["records_zone_change_idx", "tombstones_zone_change_idx"] {
            let scanned = plan.split(separator: "\n").first { $0.contains(index) }.flatMap { line in
                line.range(of: #"rows=(\d+)"#, options: .regularExpression).map { Int(line[$0].dropFirst(5))! }
            }
            #expect((scanned ?? .max) <= 101, "\(index): \(plan)")
        }
    }
}

/// Runs the purge the gateway's timer runs (as canopy_gateway) with a
/// retention of zero: every tombstone and departure committed so far goes.
func purgeHistory(_ harness: GatewayHarness) async throws {
    try await TestDatabase.withConnection(harness.endpoint.asUser("canopy_gateway", password: nil)) { connection in
        // Read to the end before the connection closes: closed while the
        // server still sends (on Citus, a WARNING per node when the
        // cluster's background workers are all taken), the purge is
        // rolled back ("connection to client lost").
        _ = try await connection.query("SELECT canopy.purge_change_history(make_interval(secs => 0))", logger: TestDatabase.logger).collect()
    }
}
