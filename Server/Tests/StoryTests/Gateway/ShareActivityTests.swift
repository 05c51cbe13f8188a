@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import PostgresNIO
import Testing

/// Each share's activity log (docs/API.md §17): written by the database in the
/// transaction of each change, read by the owner and administrators whole
/// and by other participants in part, and changed by nobody.
@Suite("Share activity")
struct ShareActivityTests {
    /// The log of a share as `token` reads it through `Share.activity`,
    /// following cursors page by page.
    static func activity(_ client: any TestClientProtocol, zone: String, token: String, pageSize: Int = 3) async throws -> [[String: Any]] {
        var entries: [[String: Any]] = []
        var after: String?
        repeat {
            let answer = try await client.call("share", """
                query($after: String, $limit: Int) { share(\(zone)) { activity(after: $after, limit: $limit) { entries { event actor subject detail at } cursor } } }
                """, ["after": after as Any? ?? NSNull(), "limit": pageSize], token: token)
            let page = (answer.object["activity"] as? [String: Any]) ?? [:]
            let got = page["entries"] as? [[String: Any]] ?? []
            #expect(got.count <= pageSize, "\(answer.body)")
            entries += got
            after = page["cursor"] as? String
        } while after != nil
        return entries
    }

    @Test("every kind of event is logged with its actor, subject and time; owner and administrators read all, a participant only their own")
    func everyEvent() async throws {
        let harness = try await GatewayHarness.make()
        let (carol, carolToken) = try await addUser("carol", email: "carol@example.com", on: harness.endpoint)
        let (dave, daveToken) = try await addUser("dave", email: "dave@example.com", on: harness.endpoint)
        let (frank, frankToken) = try await addUser("frank", on: harness.endpoint)
        let carolT = carolToken.string, daveT = daveToken.string, frankT = frankToken.string
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            let owner = harness.alice.userRecordName, bobName = harness.bob.userRecordName
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: alice)
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Team", allowsAccessRequests: true, participants: [
                  {userRecordName: "\(carol.userRecordName)", permission: READ_ONLY},
                  {userRecordName: "\(dave.userRecordName)", permission: READ_WRITE, role: ADMINISTRATOR},
                  {email: "later@example.com", permission: READ_ONLY}]) { url } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            for token in [carolT, daveT] {
                _ = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: token)
            }
            _ = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Team\", participant: {userRecordName: \"\(carol.userRecordName)\", permission: READ_WRITE}) { url } }", token: alice)
            _ = try await client.call("removeParticipant", "mutation { removeParticipant(zoneName: \"Team\", email: \"later@example.com\") { url } }", token: alice)
            _ = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { title } }", ["u": url], token: bob)
            _ = try await client.call("denyAccessRequest", "mutation { denyAccessRequest(zoneName: \"Team\", ownerName: \"\(owner)\", userRecordName: \"\(bobName)\") { url } }", token: daveT)
            _ = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { title } }", ["u": url], token: bob)
            _ = try await client.call("approveAccessRequest", "mutation { approveAccessRequest(zoneName: \"Team\", userRecordName: \"\(bobName)\") { url } }", token: alice)
            _ = try await client.call("blockAccessRequest", "mutation { blockAccessRequest(zoneName: \"Team\", userRecordName: \"\(bobName)\") { url } }", token: alice)
            _ = try await client.call("unblockRequester", "mutation { unblockRequester(zoneName: \"Team\", userRecordName: \"\(bobName)\") { url } }", token: alice)
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Team\", publicPermission: READ_ONLY) { url } }", token: alice)
            let joined = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: frankT)
            #expect(joined.object["status"] as? String == "ACCEPTED", "frank joins by the public link: \(joined.body)")
            let left = try await client.call("leaveShare", "mutation { leaveShare(zone: {zoneName: \"Team\", ownerName: \"\(owner)\"}) }", token: carolT)
            #expect(left.code == nil, "\(left.body)")

            let log = try await Self.activity(client, zone: "scope: PRIVATE, zone: {zoneName: \"Team\"}", token: alice)
            let events = log.map { "\($0["event"] as? String ?? "?") \($0["subject"] as? String ?? "-")" }
            #expect(events == [
                "SHARE_CREATED -",
                "INVITED \(carol.userRecordName)", "INVITED \(dave.userRecordName)", "INVITED later@example.com",
                "ACCEPTED \(carol.userRecordName)", "ACCEPTED \(dave.userRecordName)",
                "PERMISSION_CHANGED \(carol.userRecordName)", "REMOVED later@example.com",
                "REQUEST_MADE \(bobName)", "REQUEST_DENIED \(bobName)", "REQUEST_MADE \(bobName)", "REQUEST_APPROVED \(bobName)",
                "REQUESTER_BLOCKED \(bobName)", "REMOVED \(bobName)", "REQUESTER_UNBLOCKED \(bobName)",
                "PUBLIC_PERMISSION_CHANGED -", "ACCEPTED \(frank.userRecordName)", "LEFT \(carol.userRecordName)",
            ], "\(log)")
            #expect(log.first?["actor"] as? String == owner)
            #expect(log.first(where: { $0["event"] as? String == "REQUEST_DENIED" })?["actor"] as? String == dave.userRecordName)
            #expect(log.first(where: { $0["event"] as? String == "LEFT" })?["actor"] as? String == carol.userRecordName)
            #expect(log.allSatisfy { ($0["at"] as? Double ?? 0) > 0 })
            let change = log.first { $0["event"] as? String == "PERMISSION_CHANGED" }?["detail"] as? [String: Any]
            #expect((change?["from"] as? [String: Any])?["permission"] as? String == "READ_ONLY", "\(String(describing: change))")
            #expect((change?["to"] as? [String: Any])?["permission"] as? String == "READ_WRITE")

            // The administrator reads it all; a participant only what is about them.
            let sharedZone = "scope: SHARED, zone: {zoneName: \"Team\", ownerName: \"\(owner)\"}"
            let asAdministrator = try await Self.activity(client, zone: sharedZone, token: daveT)
            #expect(asAdministrator.count == log.count)
            let rejoin = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: bob)
            #expect(rejoin.code == "PERMISSION_FAILURE", "blocked once, bob was removed and stays out: \(rejoin.body)")
            let asParticipant = try await Self.activity(client, zone: sharedZone, token: frankT)
            #expect(asParticipant.count == 1 && asParticipant.first?["subject"] as? String == frank.userRecordName, "\(asParticipant)")
            #expect(asParticipant.first?["event"] as? String == "ACCEPTED")

            // Deleting the share logs it; the owner still reads the entries (as the gateway role, under RLS).
            _ = try await client.call("deleteShare", "mutation { deleteShare(zoneName: \"Team\") }", token: alice)
            let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
            let kept = try await TestDatabase.withConnection(gateway) { connection in
                try await connection.asUser(harness.alice.id) { connection in
                    try await connection.texts("SELECT event || ':' || (share_gone_at IS NOT NULL) FROM canopy.share_activity ORDER BY id DESC LIMIT 1")
                }
            }
            #expect(kept == ["SHARE_DELETED:true"])
            let frankSees = try await TestDatabase.withConnection(gateway) { connection in
                try await connection.asUser(frank.id) { connection in
                    try await connection.texts("SELECT count(*)::text FROM canopy.share_activity")
                }
            }
            #expect(frankSees == ["0"], "a former participant reads nothing of a deleted share")
        }
    }

    @Test("a deleted zone and a deleted root are logged as such; a change that rolls back leaves no entry")
    func causesAndRollback() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            for zone in ["Doomed", "Lists"] {
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"\(zone)\") { zoneName } }", token: alice)
            }
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Doomed\") { url } }", token: alice)
            _ = try await save(client, token: alice, zone: "Lists", [contact("groceries", name: "Groceries")])
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Lists\", rootRecordName: \"groceries\") { url } }", token: alice)
            let deletedZone = try await client.call("deleteZone", "mutation { deleteZone(scope: PRIVATE, zone: {zoneName: \"Doomed\"}) }", token: alice)
            #expect(deletedZone.code == nil, "\(deletedZone.body)")
            let deletedRoot = try await client.call("modifyRecords", "mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Lists\"}, delete: [\"groceries\"]) { deleted } }", token: alice)
            #expect(deletedRoot.code == nil, "\(deletedRoot.body)")

            // saveShare creating a share and then failing on a participant: nothing is left, not even the log entry.
            let failed = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Lists", participants: [{userRecordName: "_nobody_at_all", permission: READ_ONLY}]) { url } }
                """, token: alice)
            #expect(failed.code == "INVALID_ARGUMENTS", "\(failed.body)")

            let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
            let events = try await TestDatabase.withConnection(gateway) { connection in
                try await connection.asUser(harness.alice.id) { connection in
                    try await connection.texts("SELECT event FROM canopy.share_activity ORDER BY id")
                }
            }
            #expect(events == ["SHARE_CREATED", "SHARE_CREATED", "ZONE_DELETED", "ROOT_DELETED"], "\(events)")
        }

        // The operator reads the log of a zone that is gone.
        let printed = try CanopyBinary.run(["shares", "activity", "--owner", "alice", "--zone", "Doomed", "--database-url", harness.endpoint.url])
        #expect(printed.succeeded && printed.output.contains("SHARE_CREATED") && printed.output.contains("ZONE_DELETED  by \(harness.alice.userRecordName)"), "\(printed.output)")
        let json = try CanopyBinary.run(["shares", "activity", "--owner", "alice", "--zone", "Lists", "--root", "groceries", "--json", "--database-url", harness.endpoint.url])
        let entries = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]]
        #expect(entries?.compactMap { $0["event"] as? String } == ["SHARE_CREATED", "ROOT_DELETED"], "\(json.output)")
        #expect(entries?.allSatisfy { $0["shareGone"] != nil && $0["root"] as? String == "groceries" } == true)
        let unknown = try CanopyBinary.run(["shares", "activity", "--owner", "alice", "--zone", "Never", "--database-url", harness.endpoint.url])
        #expect(!unknown.succeeded && unknown.output.contains("has no zone Never"), "\(unknown.output)")
    }

    @Test("the gateway role cannot insert, update or delete an entry, even its owner's")
    func appendOnly() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: harness.aliceToken)
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Team\") { url } }", token: harness.aliceToken)
        }
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        for statement in [
            "UPDATE canopy.share_activity SET event = 'LEFT'",
            "DELETE FROM canopy.share_activity",
            "INSERT INTO canopy.share_activity (share_id, zone_id, zone_name, owner_id, event) SELECT share_id, zone_id, zone_name, owner_id, 'LEFT' FROM canopy.share_activity",
            "TRUNCATE canopy.share_activity",
            "SELECT canopy.log_share_activity(1, 1, 1, 'LEFT', NULL, NULL, '{}')",
        ] {
            do {
                _ = try await TestDatabase.withConnection(gateway) { connection in
                    try await connection.asUser(harness.alice.id) { connection in
                        try await connection.texts(PostgresQuery(unsafeSQL: statement))
                    }
                }
                Issue.record("\(statement) was allowed")
            } catch {
                #expect(PostgresErrors.sqlState(of: error) == "42501", "\(statement): \(PostgresErrors.message(of: error))")
            }
        }
        let count = try await TestDatabase.withConnection(gateway) { connection in
            try await connection.asUser(harness.alice.id) { connection in
                try await connection.texts("SELECT count(*)::text FROM canopy.share_activity")
            }
        }
        #expect(count == ["1"])
    }

    @Test("the purge removes the entries of shares gone longer than the retention, and nothing else")
    func purge() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            for zone in ["Kept", "Gone", "Recent"] {
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"\(zone)\") { zoneName } }", token: harness.aliceToken)
                _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"\(zone)\") { url } }", token: harness.aliceToken)
            }
            for zone in ["Gone", "Recent"] {
                _ = try await client.call("deleteShare", "mutation { deleteShare(zoneName: \"\(zone)\") }", token: harness.aliceToken)
            }
        }
        let counts = try await TestDatabase.withConnection(harness.endpoint) { connection in
            _ = try await connection.texts("UPDATE canopy.share_activity SET share_gone_at = now() - interval '100 days' WHERE zone_name = 'Gone' RETURNING 1")
            let purged = try await connection.texts("SELECT canopy.purge_share_activity(interval '90 days')::text")
            let left = try await connection.texts("SELECT zone_name || ':' || count(*) FROM canopy.share_activity GROUP BY zone_name ORDER BY zone_name")
            return (purged, left)
        }
        #expect(counts.0 == ["2"], "Gone's two entries (created, deleted): \(counts.0)")
        #expect(counts.1 == ["Kept:1", "Recent:2"], "\(counts.1)")
    }
}
