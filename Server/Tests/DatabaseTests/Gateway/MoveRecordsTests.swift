@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

/// `moveRecords` (docs/API.md §17): records change zone in one transaction,
/// keeping their names, stamps, assets and descendants; the source's feed
/// shows deletions and the target's new records; row-level security asks
/// for write access on both sides; anything refused moves nothing.
@Suite("Moving records between zones")
struct MoveRecordsTests {
    /// alice's zones Inbox and Done shared READ_WRITE with bob, Archive
    /// READ_ONLY, each accepted.
    static func sharedZones(_ client: any TestClientProtocol, _ harness: GatewayHarness) async throws {
        let alice = harness.aliceToken
        for (zone, permission) in [("Inbox", "READ_WRITE"), ("Done", "READ_WRITE"), ("Archive", "READ_ONLY")] {
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"\(zone)\") { zoneName } }", token: alice)
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "\(zone)", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: \(permission)}]) { url } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            let accepted = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: harness.bobToken)
            #expect(accepted.object["status"] as? String == "ACCEPTED", "\(accepted.body)")
        }
    }

    /// alice's zone Lists with groceries (shared READ_WRITE with bob, as a
    /// record share, accepted) and private (outside the share).
    static func sharedGroceries(_ client: any TestClientProtocol, _ harness: GatewayHarness) async throws {
        let alice = harness.aliceToken
        _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Lists\") { zoneName } }", token: alice)
        _ = try await save(client, token: alice, zone: "Lists", [contact("groceries", name: "Groceries"), contact("private", name: "Not shared")])
        let share = try await client.call("saveShare", """
            mutation { saveShare(zoneName: "Lists", rootRecordName: "groceries", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_WRITE}]) { url } }
            """, token: alice)
        let url = try #require(share.object["url"] as? String, "\(share.body)")
        _ = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: harness.bobToken)
    }

    static func move(_ client: any TestClientProtocol, from: String, to: String, _ names: [String], owner: String?, token: String,
                     withDescendants: Bool = true, parent: String? = nil) async throws -> Answer {
        let ownerPart = owner.map { ", ownerName: \"\($0)\"" } ?? ""
        return try await client.call("moveRecords", """
            mutation($names: [String!]!, $d: Boolean, $p: String) { moveRecords(from: {zoneName: "\(from)"\(ownerPart)}, to: {zoneName: "\(to)"\(ownerPart)},
              recordNames: $names, withDescendants: $d, parent: $p) { moved errors { recordName code message } } }
            """, ["names": names, "d": withDescendants, "p": parent as Any? ?? NSNull()], token: token)
    }

    static func names(in zone: String, _ client: any TestClientProtocol, token: String) async throws -> Set<String> {
        let answer = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"\(zone)\"}, recordType: \"Contact\", limit: 400) { records { recordName } } }", token: token)
        return Set((answer.object["records"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String })
    }

    @Test("a participant moves a three-level hierarchy with an asset between two shared zones; names, stamps and the asset stay; both zones' feeds converge for owner and participant")
    func hierarchyWithAsset() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration) { client in
            let alice = harness.aliceToken, bob = harness.bobToken, owner = harness.alice.userRecordName
            try await Self.sharedZones(client, harness)
            let uploaded = try await client.execute(uri: "/assets", method: .post,
                                                    headers: [.authorization: "Bearer \(alice)", .contentType: "text/plain"],
                                                    body: ByteBuffer(string: "a photo of the list"))
            let upload = try responseJSON(uploaded.body)
            let uploadToken = try #require(upload["uploadToken"] as? String, "\(upload)")
            var note = contact("note", name: "Note", parent: "item")
            note["fields"] = ["name": "Note", "photo": ["type": "ASSET", "uploadToken": uploadToken]]
            let saved = try await save(client, token: alice, zone: "Inbox", [contact("list", name: "List"), contact("item", name: "Item", parent: "list"), note, contact("other", name: "Other")])
            #expect(saved.count == 4)

            // Followers: alice (PRIVATE) and bob (SHARED) hold tokens of both zones before the move.
            var tokens: [String: String] = [:]
            for (zone, scope, owner, token) in [("Inbox", "PRIVATE", nil, alice), ("Done", "PRIVATE", nil, alice),
                                                 ("Inbox", "SHARED", owner, bob), ("Done", "SHARED", owner, bob)] as [(String, String, String?, String)] {
                let (page, answer) = try await client.zoneChanges(zone, scope: scope, owner: owner, since: nil, token: token)
                tokens["\(zone) \(scope)"] = try #require(page?.token, "\(answer.body)")
            }

            let moved = try await Self.move(client, from: "Inbox", to: "Done", ["list"], owner: owner, token: bob)
            #expect(moved.object["moved"] as? [String] == ["item", "list", "note"], "\(moved.body)")
            #expect((moved.object["errors"] as? [Any])?.isEmpty == true)
            #expect(try await Self.names(in: "Inbox", client, token: alice) == ["other"])
            #expect(try await Self.names(in: "Done", client, token: alice) == ["list", "item", "note"])

            let looked = try await client.call("lookup", """
                { lookup(scope: PRIVATE, zone: {zoneName: "Done"}, recordNames: ["note", "item"]) { record { recordName parent fields created { userRecordName } modified { userRecordName } } } }
                """, token: alice)
            let records = looked.list.compactMap { $0["record"] as? [String: Any] }
            let movedNote = try #require(records.first { $0["recordName"] as? String == "note" }, "\(looked.body)")
            #expect(movedNote["parent"] as? String == "item")
            #expect((records.first { $0["recordName"] as? String == "item" })?["parent"] as? String == "list")
            #expect((movedNote["created"] as? [String: Any])?["userRecordName"] as? String == owner, "the created stamp is kept")
            #expect((movedNote["modified"] as? [String: Any])?["userRecordName"] as? String == harness.bob.userRecordName)
            let photo = (movedNote["fields"] as? [String: Any])?["photo"] as? [String: Any]
            #expect(photo?["sha256"] as? String == upload["sha256"] as? String, "\(String(describing: photo))")
            let downloadURL = try #require(photo?["downloadURL"] as? String)
            let assetsAt = try #require(downloadURL.range(of: "/assets/"))
            let path = String(downloadURL[assetsAt.lowerBound...])
            let download = try await client.execute(uri: path, method: .get)
            #expect(download.status == .ok && String(buffer: download.body) == "a photo of the list", "the asset moved with its record")

            // Every follower converges: Inbox shows three deletions, Done three new records.
            for (zone, scope, owner, token) in [("Inbox", "PRIVATE", nil, alice), ("Done", "PRIVATE", nil, alice),
                                                 ("Inbox", "SHARED", owner, bob), ("Done", "SHARED", owner, bob)] as [(String, String, String?, String)] {
                let (page, answer) = try await client.zoneChanges(zone, scope: scope, owner: owner, since: tokens["\(zone) \(scope)"], token: token)
                let expected: (changed: Set<String>, deleted: Set<String>) = zone == "Inbox" ? ([], ["list", "item", "note"]) : (["list", "item", "note"], [])
                #expect(Set(page?.changed ?? ["?"]) == expected.changed && Set(page?.deleted ?? ["?"]) == expected.deleted, "\(zone) \(scope): \(answer.body)")
            }
        }
    }

    @Test("a name clash, a missing permission on either side, a share's root, an unknown name and a stranger are each refused with nothing moved")
    func refusals() async throws {
        let harness = try await GatewayHarness.make()
        let (carol, carolToken) = try await addUser("carol", on: harness.endpoint)
        _ = carol
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken, owner = harness.alice.userRecordName
            try await Self.sharedZones(client, harness)
            _ = try await save(client, token: alice, zone: "Inbox", [contact("a", name: "A"), contact("b", name: "B", parent: "a"), contact("dup", name: "Dup")])
            _ = try await save(client, token: alice, zone: "Done", [contact("dup", name: "Other dup")])
            _ = try await save(client, token: alice, zone: "Archive", [contact("old", name: "Old")])
            let before = try await Self.names(in: "Inbox", client, token: alice)

            let clash = try await Self.move(client, from: "Inbox", to: "Done", ["a", "dup"], owner: owner, token: bob)
            let clashErrors = clash.object["errors"] as? [[String: Any]] ?? []
            #expect(clashErrors.map { $0["recordName"] as? String } == ["dup"] && clashErrors.first?["code"] as? String == "SERVER_RECORD_CHANGED", "\(clash.body)")
            #expect((clash.object["moved"] as? [Any])?.isEmpty == true)

            let unknown = try await Self.move(client, from: "Inbox", to: "Done", ["a", "ghost"], owner: owner, token: bob)
            #expect((unknown.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "UNKNOWN_ITEM", "\(unknown.body)")

            let intoReadOnly = try await Self.move(client, from: "Inbox", to: "Archive", ["a"], owner: owner, token: bob)
            #expect(intoReadOnly.code == "PERMISSION_FAILURE", "\(intoReadOnly.body)")
            let outOfReadOnly = try await Self.move(client, from: "Archive", to: "Inbox", ["old"], owner: owner, token: bob)
            #expect(outOfReadOnly.code == "PERMISSION_FAILURE", "\(outOfReadOnly.body)")
            let stranger = try await Self.move(client, from: "Inbox", to: "Done", ["a"], owner: owner, token: carolToken.string)
            #expect(stranger.code == "ZONE_NOT_FOUND", "\(stranger.body)")

            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Lists\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Lists", [contact("groceries", name: "Groceries"), contact("milk", name: "Milk", parent: "groceries")])
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Lists\", rootRecordName: \"groceries\") { url } }", token: alice)
            let root = try await Self.move(client, from: "Lists", to: "Inbox", ["groceries"], owner: nil, token: alice)
            let rootError = (root.object["errors"] as? [[String: Any]])?.first
            #expect(rootError?["code"] as? String == "ALREADY_SHARED", "\(root.body)")
            let rootMessage = rootError?["message"] as? String ?? ""
            #expect(rootMessage.contains("delete the share"), "\(root.body)")

            #expect(try await Self.names(in: "Inbox", client, token: alice) == before)
            #expect(try await Self.names(in: "Done", client, token: alice) == ["dup"])
            #expect(try await Self.names(in: "Archive", client, token: alice) == ["old"])
            #expect(try await Self.names(in: "Lists", client, token: alice) == ["groceries", "milk"])

            // Once the share is deleted the root moves, its child with it.
            _ = try await client.call("deleteShare", "mutation { deleteShare(zoneName: \"Lists\", rootRecordName: \"groceries\") }", token: alice)
            let after = try await Self.move(client, from: "Lists", to: "Inbox", ["groceries"], owner: nil, token: alice)
            #expect(after.object["moved"] as? [String] == ["groceries", "milk"], "\(after.body)")
        }
    }

    @Test("into a record share: a participant moves a record under the share's root with parent; without it, outside the share, it is refused")
    func intoRecordShare() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken, owner = harness.alice.userRecordName
            try await Self.sharedZones(client, harness)
            try await Self.sharedGroceries(client, harness)
            _ = try await save(client, token: alice, zone: "Inbox", [contact("milk", name: "Milk")])

            let outside = try await Self.move(client, from: "Inbox", to: "Lists", ["milk"], owner: owner, token: bob)
            #expect(outside.code == "PERMISSION_FAILURE", "\(outside.body)")
            let under = try await Self.move(client, from: "Inbox", to: "Lists", ["milk"], owner: owner, token: bob, parent: "groceries")
            #expect(under.object["moved"] as? [String] == ["milk"], "\(under.body)")
            let read = try await client.call("lookup", """
                { lookup(scope: SHARED, zone: {zoneName: "Lists", ownerName: "\(owner)"}, recordNames: ["milk", "private"]) { recordName record { parent } error { code } } }
                """, token: bob)
            #expect((read.list.first?["record"] as? [String: Any])?["parent"] as? String == "groceries", "bob reads milk in the share: \(read.body)")
            #expect((read.list.last?["error"] as? [String: Any])?["code"] as? String == "UNKNOWN_ITEM", "\(read.body)")
        }
    }

    /// Issue 48: a name the target zone holds outside the caller's share is
    /// invisible to the clash check (row-level security); the UPDATE met
    /// the unique key and the answer was INTERNAL_ERROR. Now it is the
    /// refusal modifyRecords gives a save onto that name, alone and in a
    /// batch, with nothing moved.
    @Test("a participant's record moved under a share's root onto a name the owner's zone holds outside the share: PERMISSION_FAILURE for that name, alone and in a batch, nothing moved")
    func invisibleNameClash() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken, owner = harness.alice.userRecordName
            try await Self.sharedGroceries(client, harness)
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Mine\") { zoneName } }", token: bob)
            _ = try await save(client, token: bob, zone: "Mine", [contact("private", name: "Bob's"), contact("eggs", name: "Eggs")])

            for names in [["private"], ["eggs", "private"]] {
                let moved = try await client.call("moveRecords", """
                    mutation($names: [String!]!) { moveRecords(from: {zoneName: "Mine"}, to: {zoneName: "Lists", ownerName: "\(owner)"},
                      recordNames: $names, parent: "groceries") { moved errors { recordName code message } } }
                    """, ["names": names], token: bob)
                #expect(moved.code == nil, "no request-level error (was INTERNAL_ERROR): \(moved.body)")
                let errors = moved.object["errors"] as? [[String: Any]] ?? []
                #expect(errors.map { $0["recordName"] as? String } == ["private"] && errors.first?["code"] as? String == "PERMISSION_FAILURE", "\(moved.body)")
                #expect((moved.object["moved"] as? [Any])?.isEmpty == true, "\(moved.body)")
                let message = errors.first?["message"] as? String ?? ""
                #expect(!message.contains("records_") && !message.contains("constraint") && !message.contains("duplicate"), "no table or constraint named: \(message)")
            }
            // modifyRecords gives the same refusal for that name.
            let saved = try await client.call("modifyRecords", """
                mutation { modifyRecords(scope: SHARED, zone: {zoneName: "Lists", ownerName: "\(owner)"},
                  save: [{recordName: "private", recordType: "Contact", fields: {name: "x"}, parent: "groceries"}]) { errors { recordName code } } }
                """, token: bob)
            #expect((saved.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "PERMISSION_FAILURE", "\(saved.body)")
            #expect(try await Self.names(in: "Mine", client, token: bob) == ["private", "eggs"])
            #expect(try await Self.names(in: "Lists", client, token: alice) == ["groceries", "private"])
        }
    }

    /// A concurrent request's answer: done. A move takes both zones' locks
    /// before any record's, as every save does, so none deadlocks ("try
    /// again", SERVICE_UNAVAILABLE, would say one did).
    static func acceptable(_ code: String?) -> Bool {
        code == nil
    }

    @Test("eight concurrent moves and saves on the same records leave every record in exactly one zone")
    func concurrentMovesAndSaves() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, owner = harness.alice.userRecordName
            try await Self.sharedZones(client, harness)
            let names = (0..<10).map { "r\($0)" }
            _ = try await save(client, token: alice, zone: "Inbox", names.map { contact($0, name: "v0") })
            let tokens = [alice, harness.bobToken]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for round in 0..<6 {
                            let token = tokens[worker % 2]
                            let picked = Array(names.shuffled().prefix(3))
                            if worker < 4 {
                                let (from, to) = (worker + round) % 2 == 0 ? ("Inbox", "Done") : ("Done", "Inbox")
                                let answer = try await Self.move(client, from: from, to: to, picked, owner: owner, token: token)
                                let codes = Set((answer.object["errors"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String })
                                #expect(Self.acceptable(answer.code) && codes.isSubset(of: ["UNKNOWN_ITEM", "SERVER_RECORD_CHANGED"]), "\(answer.body)")
                            } else {
                                for zone in ["Inbox", "Done"] {
                                    let looked = try await client.call("lookup", """
                                        query($n: [String!]!) { lookup(scope: SHARED, zone: {zoneName: "\(zone)", ownerName: "\(owner)"}, recordNames: $n) { recordName record { recordChangeTag } } }
                                        """, ["n": picked], token: harness.bobToken)
                                    let found = looked.list.compactMap { item -> [String: Any]? in
                                        guard let tag = (item["record"] as? [String: Any])?["recordChangeTag"] as? String, let name = item["recordName"] as? String else { return nil }
                                        return contact(name, name: "w\(worker) r\(round)", tag: tag)
                                    }
                                    // One record a save, as an app's edit is.
                                    for record in found {
                                        let saved = try await client.call("modifyRecords", """
                                            mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: {zoneName: "\(zone)", ownerName: "\(owner)"}, save: $s) { errors { code message } } }
                                            """, ["s": [record]], token: harness.bobToken)
                                        let codes = Set((saved.object["errors"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String })
                                        #expect(Self.acceptable(saved.code) && codes.isSubset(of: ["UNKNOWN_ITEM", "SERVER_RECORD_CHANGED"]), "\(saved.body)")
                                    }
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let inbox = try await Self.names(in: "Inbox", client, token: alice)
            let done = try await Self.names(in: "Done", client, token: alice)
            #expect(inbox.isDisjoint(with: done), "a record in both zones: \(inbox.intersection(done))")
            #expect(inbox.union(done) == Set(names), "a record lost: \(Set(names).subtracting(inbox.union(done)))")
            let rows = try await TestDatabase.withConnection(harness.endpoint) { connection in
                try await connection.texts("SELECT count(*)::text FROM canopy.records WHERE record_name LIKE 'r%' AND record_type = 'Contact'")
            }
            #expect(rows == ["10"])
        }
    }
}
