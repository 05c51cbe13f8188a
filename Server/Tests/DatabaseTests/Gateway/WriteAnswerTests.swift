@testable import CanopyGatewayTestSupport
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import PostgresNIO
import Testing

/// A save-only batch is answered from the rows its write returned, not read
/// back by a second statement (issue 51, item 2). These batches check that
/// the answer is the record as stored, and that the change feed and the
/// share's activity log see what they saw when the answer was read back:
/// every record written once, in batch order, deletions as tombstones, the
/// root's deletion logged.
@Suite("What a batch answers, and what the feed and the log see")
struct WriteAnswerTests {
    static let recordSelection = "recordName recordType parent recordChangeTag fields created { timestamp userRecordName } modified { timestamp userRecordName }"

    /// The records of `names` as a lookup answers them, by name.
    static func lookup(_ client: any TestClientProtocol, _ names: [String], token: String) async throws -> [String: NSDictionary] {
        let answer = try await client.call("lookup", """
            query($n: [String!]!) { lookup(scope: PRIVATE, zone: {zoneName: "Mixed"}, recordNames: $n) { recordName record { \(recordSelection) } } }
            """, ["n": names], token: token)
        var records: [String: NSDictionary] = [:]
        for item in answer.list {
            if let record = item["record"] as? [String: Any], let name = item["recordName"] as? String {
                records[name] = record as NSDictionary
            }
        }
        return records
    }

    /// The feed from `since` to its end: (changed records in feed order, deleted names, token).
    static func feed(_ client: any TestClientProtocol, since: String?, token: String) async throws -> ([NSDictionary], [String], String) {
        var changed: [NSDictionary] = []
        var deleted: [String] = []
        var since = since
        while true {
            let answer = try await client.call("zoneChanges", """
                query($s: String) { zoneChanges(scope: PRIVATE, zone: {zoneName: "Mixed"}, since: $s, limit: 3) {
                  changed { \(recordSelection) } deleted { recordName } token moreComing } }
                """, ["s": since as Any? ?? NSNull()], token: token)
            changed += (answer.object["changed"] as? [[String: Any]] ?? []).map { $0 as NSDictionary }
            deleted += (answer.object["deleted"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
            since = answer.object["token"] as? String
            #expect(since != nil, "\(answer.body)")
            if answer.object["moreComing"] as? Bool != true || since == nil { return (changed, deleted, since ?? "") }
        }
    }

    static func modify(_ client: any TestClientProtocol, save: [[String: Any]], delete: [String] = [], token: String) async throws -> Answer {
        try await client.call("modifyRecords", """
            mutation($s: [RecordInput!], $d: [String!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Mixed"}, save: $s, delete: $d, atomic: false) {
              saved { \(recordSelection) } deleted errors { recordName code serverRecord { \(recordSelection) } } } }
            """, ["s": save, "d": delete], token: token)
    }

    static func record(_ name: String, _ fields: [String: Any], tag: String? = nil, parent: String? = nil) -> [String: Any] {
        var record: [String: Any] = ["recordName": name, "recordType": "Item", "fields": fields]
        if let tag { record["recordChangeTag"] = tag }
        if let parent { record["parent"] = parent }
        return record
    }

    @Test("saved records and a conflict's server record are answered as stored; the feed sees each write once, in order; the log sees the root deleted")
    func mixedBatches() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Mixed\") { zoneName } }", token: alice)
            // Batch 1: new records only (the fast path, one INSERT), a child among them.
            let first = try await Self.modify(client, save: [
                Self.record("a1", ["n": 1]), Self.record("a2", ["n": 2, "s": "two"]), Self.record("a3", ["n": 3]),
                Self.record("root", ["title": "list"]), Self.record("child", ["n": 4], parent: "root"),
            ], token: alice)
            let firstSaved = first.object["saved"] as? [[String: Any]] ?? []
            #expect(firstSaved.compactMap { $0["recordName"] as? String } == ["a1", "a2", "a3", "root", "child"], "\(first.body)")
            let stored = try await Self.lookup(client, ["a1", "a2", "a3", "root", "child"], token: alice)
            for saved in firstSaved {
                let name = saved["recordName"] as! String
                #expect(saved as NSDictionary == stored[name], "\(name): answered \(saved), stored \(stored[name] as Any)")
            }
            let tags = stored.mapValues { $0["recordChangeTag"] as! String }
            let (fromStart, _, afterFirst) = try await Self.feed(client, since: nil, token: alice)
            #expect(fromStart.map { $0["recordName"] as! String } == ["a1", "a2", "a3", "root", "child"])
            #expect(fromStart == firstSaved.map { $0 as NSDictionary }, "the feed holds what the batch answered")

            let share = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Mixed\", rootRecordName: \"root\") { url } }", token: alice)
            #expect(share.code == nil, "\(share.body)")
            let (_, _, afterShare) = try await Self.feed(client, since: afterFirst, token: alice)

            // Batch 2: saves only, one at a time (tags): an update, a stale
            // update (a conflict, its server record answered), a new child
            // of the shared root.
            let second = try await Self.modify(client, save: [
                Self.record("a1", ["n": 10], tag: tags["a1"]), Self.record("a2", ["n": 20], tag: "stale"),
                Self.record("n1", ["n": 5], parent: "root"),
            ], token: alice)
            let secondSaved = second.object["saved"] as? [[String: Any]] ?? []
            #expect(secondSaved.compactMap { $0["recordName"] as? String } == ["a1", "n1"], "\(second.body)")
            let errors = second.object["errors"] as? [[String: Any]] ?? []
            #expect(errors.count == 1 && errors.first?["code"] as? String == "SERVER_RECORD_CHANGED", "\(second.body)")
            let now = try await Self.lookup(client, ["a1", "a2", "n1"], token: alice)
            #expect((errors.first?["serverRecord"] as? [String: Any]).map { $0 as NSDictionary } == now["a2"], "the conflict's server record as stored")
            #expect(now["a2"]?["recordChangeTag"] as? String == tags["a2"], "the stale update changed nothing")
            for saved in secondSaved {
                let name = saved["recordName"] as! String
                #expect(saved as NSDictionary == now[name], "\(name): answered \(saved), stored \(now[name] as Any)")
            }
            let (afterSecondChanges, afterSecondDeleted, afterSecond) = try await Self.feed(client, since: afterShare, token: alice)
            #expect(afterSecondChanges == secondSaved.map { $0 as NSDictionary }, "the feed sees exactly the two saves: \(afterSecondChanges)")
            #expect(afterSecondDeleted.isEmpty)

            // Batch 3: saves and deletes together (read back by a second
            // statement): an update, a new record, a plain delete, and the
            // share's root deleted.
            let third = try await Self.modify(client, save: [
                Self.record("a3", ["n": 30], tag: tags["a3"]), Self.record("n2", ["n": 6]),
            ], delete: ["a1", "root"], token: alice)
            let thirdSaved = third.object["saved"] as? [[String: Any]] ?? []
            #expect(thirdSaved.compactMap { $0["recordName"] as? String } == ["a3", "n2"], "\(third.body)")
            #expect(third.object["deleted"] as? [String] == ["a1", "root"], "\(third.body)")
            #expect((third.object["errors"] as? [Any])?.isEmpty == true, "\(third.body)")
            let later = try await Self.lookup(client, ["a3", "n2"], token: alice)
            for saved in thirdSaved {
                let name = saved["recordName"] as! String
                #expect(saved as NSDictionary == later[name], "\(name): answered \(saved), stored \(later[name] as Any)")
            }
            let (afterThirdChanges, afterThirdDeleted, _) = try await Self.feed(client, since: afterSecond, token: alice)
            #expect(Array(afterThirdChanges.prefix(2)) == thirdSaved.map { $0 as NSDictionary }, "\(afterThirdChanges)")
            #expect(Set(afterThirdDeleted) == ["a1", "root"], "\(afterThirdDeleted)")

        }
        // The log, as its owner reads it (the share is gone with its root).
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        let events = try await TestDatabase.withConnection(gateway) { connection in
            // By canopy.act_as (SET LOCAL), which Citus carries to its workers.
            try await connection.asUser(harness.alice.id, actAs: true) { connection in
                try await connection.texts("SELECT event FROM canopy.share_activity ORDER BY id")
            }
        }
        #expect(events == ["SHARE_CREATED", "ROOT_DELETED"], "\(events)")
    }
}
