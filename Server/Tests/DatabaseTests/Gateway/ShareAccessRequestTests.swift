@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import PostgresNIO
import Testing

/// Access requests (docs/API.md §17, CloudKit iOS 26) through `/graphql`: a
/// share that does not allow them tells a stranger nothing; one that does
/// takes requests, which the owner and administrators approve, deny, block
/// and unblock, and nobody else decides.
@Suite("Access requests")
struct ShareAccessRequestTests {
    @Test("not allowed: a stranger's metadata and request look exactly like an unknown share's")
    func notAllowedLooksUnknown() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: alice)
            let share = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Team\") { url allowsAccessRequests } }", token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            #expect(share.object["allowsAccessRequests"] as? Bool == false)
            let unknownURL = String(url.dropLast(8)) + "00000000"
            for (field, document) in [("shareMetadata", "query($u: String!) { shareMetadata(url: $u) { title } }"),
                                      ("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { title } }")] {
                let real = try await client.call(field, document, ["u": url], token: bob)
                let unknown = try await client.call(field, document, ["u": unknownURL], token: bob)
                #expect(real.code == "PERMISSION_FAILURE", "\(real.body)")
                #expect(real.code == unknown.code && real.message == unknown.message, "\(real.body) vs \(unknown.body)")
            }
            let requests = try await client.call("share", "{ share(scope: PRIVATE, zone: {zoneName: \"Team\"}) { accessRequests { status } } }", token: alice)
            #expect((requests.object["accessRequests"] as? [Any])?.isEmpty == true, "\(requests.body)")
        }
    }

    @Test("allowed: request, approve (the requester reads next), deny and ask again, block (removed, cannot ask), unblock; administrators decide, others cannot")
    func requestLifecycle() async throws {
        let harness = try await GatewayHarness.make()
        let (carol, carolToken) = try await addUser("carol", email: "carol@example.com", on: harness.endpoint)
        let (dave, daveToken) = try await addUser("dave", email: "dave@example.com", on: harness.endpoint)
        let (eve, eveToken) = try await addUser("eve", email: "eve@example.com", on: harness.endpoint)
        let carolT = carolToken.string, daveT = daveToken.string, eveT = eveToken.string
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            let owner = harness.alice.userRecordName
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Team", [contact("seed", name: "Seed")])
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Team", title: "Team list", allowsAccessRequests: true, participants: [
                  {userRecordName: "\(carol.userRecordName)", permission: READ_WRITE},
                  {userRecordName: "\(dave.userRecordName)", permission: READ_WRITE, role: ADMINISTRATOR}]) { url allowsAccessRequests } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            #expect(share.object["allowsAccessRequests"] as? Bool == true)
            for token in [carolT, daveT] {
                let accepted = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: token)
                #expect(accepted.object["status"] as? String == "ACCEPTED", "\(accepted.body)")
            }
            let sharedZone = "scope: SHARED, zone: {zoneName: \"Team\", ownerName: \"\(owner)\"}"

            // A stranger sees the share's name and owner, and may ask.
            let before = try await client.call("shareMetadata", """
                query($u: String!) { shareMetadata(url: $u) { title permission status allowsAccessRequests accessRequestStatus rootRecord { recordName } } }
                """, ["u": url], token: bob)
            #expect(before.object["title"] as? String == "Team list", "\(before.body)")
            #expect(before.object["permission"] as? String == "NONE")
            #expect(before.object["allowsAccessRequests"] as? Bool == true)
            #expect(before.object["accessRequestStatus"] is NSNull)
            let accept = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: bob)
            #expect(accept.code == "PERMISSION_FAILURE", "a requester cannot simply accept: \(accept.body)")
            let asked = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { accessRequestStatus permission } }", ["u": url], token: bob)
            #expect(asked.object["accessRequestStatus"] as? String == "PENDING", "\(asked.body)")
            let stillOut = try await client.call("records", "{ records(\(sharedZone), recordType: \"Contact\") { records { recordName } } }", token: bob)
            #expect(stillOut.code == "ZONE_NOT_FOUND", "\(stillOut.body)")

            // The owner and the administrator see it, with the verified contact; the READ_WRITE participant does not.
            func requests(_ token: String, owned: Bool) async throws -> [[String: Any]] {
                let zone = owned ? "scope: PRIVATE, zone: {zoneName: \"Team\"}" : sharedZone
                let answer = try await client.call("share", "{ share(\(zone)) { accessRequests { user { userRecordName email } status requestedAt } } }", token: token)
                return answer.object["accessRequests"] as? [[String: Any]] ?? []
            }
            for (token, owned) in [(alice, true), (daveT, false)] {
                let list = try await requests(token, owned: owned)
                #expect(list.count == 1 && list.first?["status"] as? String == "PENDING", "\(list)")
                #expect((list.first?["user"] as? [String: Any])?["userRecordName"] as? String == harness.bob.userRecordName)
                #expect((list.first?["requestedAt"] as? Double ?? 0) > 0)
            }
            #expect(try await requests(carolT, owned: false).isEmpty)

            // A READ_WRITE participant cannot decide; the administrator can.
            let approveByCarol = try await client.call("approveAccessRequest", """
                mutation { approveAccessRequest(zoneName: "Team", ownerName: "\(owner)", userRecordName: "\(harness.bob.userRecordName)", permission: READ_WRITE) { url } }
                """, token: carolT)
            #expect(approveByCarol.code == "PERMISSION_FAILURE", "\(approveByCarol.body)")
            let approved = try await client.call("approveAccessRequest", """
                mutation { approveAccessRequest(zoneName: "Team", ownerName: "\(owner)", userRecordName: "\(harness.bob.userRecordName)", permission: READ_WRITE) {
                  participants { user { userRecordName } status permission isApprovedRequester dateAddedToShare } accessRequests { status } } }
                """, token: daveT)
            let bobRow = (approved.object["participants"] as? [[String: Any]] ?? []).first {
                ($0["user"] as? [String: Any])?["userRecordName"] as? String == harness.bob.userRecordName
            }
            #expect(bobRow?["status"] as? String == "ACCEPTED" && bobRow?["isApprovedRequester"] as? Bool == true, "\(approved.body)")
            #expect((bobRow?["dateAddedToShare"] as? Double ?? 0) > 0)
            #expect((approved.object["accessRequests"] as? [Any])?.isEmpty == true)
            let reads = try await client.call("records", "{ records(\(sharedZone), recordType: \"Contact\") { records { recordName } } }", token: bob)
            #expect((reads.object["records"] as? [Any])?.count == 1, "the approved requester reads on the next request: \(reads.body)")
            let invited = try await client.call("share", "{ share(\(sharedZone)) { participants { user { userRecordName } isApprovedRequester } } }", token: carolT)
            let carolRows = invited.object["participants"] as? [[String: Any]] ?? []
            #expect(carolRows.allSatisfy { $0["isApprovedRequester"] as? Bool == false }, "\(invited.body)")

            // Deny, and ask again.
            _ = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { title } }", ["u": url], token: eveT)
            let denied = try await client.call("denyAccessRequest", "mutation { denyAccessRequest(zoneName: \"Team\", userRecordName: \"\(eve.userRecordName)\") { accessRequests { status } } }", token: alice)
            #expect((denied.object["accessRequests"] as? [Any])?.isEmpty == true, "\(denied.body)")
            let again = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { accessRequestStatus } }", ["u": url], token: eveT)
            #expect(again.object["accessRequestStatus"] as? String == "PENDING", "a denied requester may ask again: \(again.body)")
            let denyTwice = try await client.call("denyAccessRequest", "mutation { denyAccessRequest(zoneName: \"Team\", userRecordName: \"\(harness.bob.userRecordName)\") { url } }", token: alice)
            #expect(denyTwice.code == "UNKNOWN_ITEM", "bob has no pending request: \(denyTwice.body)")

            // Block: the pending requester cannot ask again; a participant blocked is removed.
            for name in [eve.userRecordName, harness.bob.userRecordName] {
                let blocked = try await client.call("blockAccessRequest", "mutation { blockAccessRequest(zoneName: \"Team\", userRecordName: \"\(name)\") { accessRequests { user { userRecordName } status } } }", token: alice)
                #expect(blocked.code == nil, "\(blocked.body)")
            }
            let list = try await requests(alice, owned: true)
            #expect(Set(list.compactMap { $0["status"] as? String }) == ["BLOCKED"] && list.count == 2, "\(list)")
            let blockedAsk = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { title } }", ["u": url], token: eveT)
            #expect(blockedAsk.code == "PERMISSION_FAILURE", "\(blockedAsk.body)")
            let blockedMeta = try await client.call("shareMetadata", "query($u: String!) { shareMetadata(url: $u) { title } }", ["u": url], token: eveT)
            #expect(blockedMeta.code == "PERMISSION_FAILURE", "a blocked person learns nothing more: \(blockedMeta.body)")
            let bobOut = try await client.call("records", "{ records(\(sharedZone), recordType: \"Contact\") { records { recordName } } }", token: bob)
            #expect(bobOut.code == "ZONE_NOT_FOUND", "a blocked participant is removed: \(bobOut.body)")

            // Unblock: eve may ask again.
            let unblocked = try await client.call("unblockRequester", "mutation { unblockRequester(zoneName: \"Team\", userRecordName: \"\(eve.userRecordName)\") { url } }", token: alice)
            #expect(unblocked.code == nil, "\(unblocked.body)")
            let afterUnblock = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { accessRequestStatus } }", ["u": url], token: eveT)
            #expect(afterUnblock.object["accessRequestStatus"] as? String == "PENDING", "\(afterUnblock.body)")
            let unblockAgain = try await client.call("unblockRequester", "mutation { unblockRequester(zoneName: \"Team\", userRecordName: \"\(eve.userRecordName)\") { url } }", token: alice)
            #expect(unblockAgain.code == "UNKNOWN_ITEM", "\(unblockAgain.body)")

            // Turning requests off hides the share from a stranger again.
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Team\", allowsAccessRequests: false) { url } }", token: alice)
            let (frank, frankToken) = try await addUser("frank", on: harness.endpoint)
            _ = frank
            let hidden = try await client.call("shareMetadata", "query($u: String!) { shareMetadata(url: $u) { title } }", ["u": url], token: frankToken.string)
            #expect(hidden.code == "PERMISSION_FAILURE", "\(hidden.body)")
        }
    }

    @Test("a request changes the owner's database: databaseChanges lists the zone, and the owner's DATABASE subscription's webhook is called")
    func requestReachesOwner() async throws {
        let harness = try await GatewayHarness.make()
        let receiver = try await WebhookReceiver()
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: alice)
            let share = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Team\", allowsAccessRequests: true) { url } }", token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            let start = try await client.databaseChanges(scope: "PRIVATE", since: nil, token: alice)
            let quiet = try await client.databaseChanges(scope: "PRIVATE", since: start.token, token: alice)
            #expect(quiet.changed.isEmpty, "\(quiet.answer.body)")
            _ = try await PushFixture.registerWebhook(client, url: receiver.url("alice"), token: alice)
            try await PushFixture.subscribe(client, "owner", kind: "DATABASE", token: alice)
            _ = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { title } }", ["u": url], token: bob)
            let after = try await client.databaseChanges(scope: "PRIVATE", since: start.token, token: alice)
            #expect(after.changed == ["Team"], "\(after.answer.body)")
            #expect(await eventually { await receiver.log.count() >= 1 }, "no webhook for the request")
            let push = try #require(await receiver.log.received.first)
            #expect(push.body.contains("\"owner\""), "the owner's DATABASE subscription fired: \(push.body)")
        }
    }
}

/// The policies on `canopy.share_requests`, as the gateway role: a
/// requester cannot write a request but through `request_share_access`; a
/// participant who does not manage the share sees and decides nothing; the
/// owner cannot put a request back to PENDING.
@Suite("Access requests under row-level security")
struct ShareRequestPolicyTests {
    @Test("as the gateway role: no request written directly, none seen or decided by a non-manager, none set back to PENDING")
    func policies() async throws {
        let harness = try await GatewayHarness.make()
        let (carol, carolToken) = try await addUser("carol", on: harness.endpoint)
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: harness.aliceToken)
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Team", allowsAccessRequests: true, participants: [{userRecordName: "\(carol.userRecordName)", permission: READ_WRITE}]) { url } }
                """, token: harness.aliceToken)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            _ = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: carolToken.string)
            _ = try await client.call("requestShareAccess", "mutation($u: String!) { requestShareAccess(url: $u) { title } }", ["u": url], token: harness.bobToken)
        }
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        func attempt(_ user: Int64, _ sql: String) async -> (rows: [String?], state: String?) {
            do {
                let rows = try await TestDatabase.withConnection(gateway) { connection in
                    try await connection.asUser(user, actAs: true) { connection in try await connection.texts(PostgresQuery(unsafeSQL: sql)) }
                }
                return (rows, nil)
            } catch {
                return ([], PostgresErrors.sqlState(of: error))
            }
        }
        let bob = harness.bob.id, alice = harness.alice.id
        let shareID = try #require(try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.texts("SELECT id::text FROM canopy.shares")
        }.first ?? nil)
        // bob writes a request by hand: refused (only the definer writes one for a requester). The
        // share's owner is given, as Citus needs to route a row (without it, it refuses 22004 first).
        for status in ["PENDING", "APPROVED", "BLOCKED"] {
            let forged = await attempt(bob, "INSERT INTO canopy.share_requests (share_id, owner_id, user_id, status) VALUES (\(shareID), \(alice), \(bob), '\(status)')")
            #expect(forged.state == "42501", "bob wrote a \(status) request: \(forged)")
        }
        let own = await attempt(bob, "SELECT status FROM canopy.share_requests")
        #expect(own.rows == ["PENDING"], "a requester reads their own request: \(own)")
        let approveSelf = await attempt(bob, "UPDATE canopy.share_requests SET status = 'APPROVED' RETURNING 1")
        #expect(approveSelf.rows.isEmpty, "a requester cannot decide their own request: \(approveSelf)")
        // carol, READ_WRITE, sees and decides nothing.
        let carolSees = await attempt(carol.id, "SELECT count(*)::text FROM canopy.share_requests")
        #expect(carolSees.rows == ["0"], "\(carolSees)")
        let carolDecides = await attempt(carol.id, "UPDATE canopy.share_requests SET status = 'APPROVED' RETURNING 1")
        #expect(carolDecides.rows.isEmpty)
        // alice, the owner, cannot set a request back to PENDING, nor write one for someone.
        let pending = await attempt(alice, "UPDATE canopy.share_requests SET status = 'PENDING' RETURNING 1")
        #expect(pending.state == "42501", "\(pending)")
        let written = await attempt(alice, "INSERT INTO canopy.share_requests (share_id, owner_id, user_id, status) VALUES (\(shareID), \(alice), \(carol.id), 'PENDING')")
        #expect(written.state == "42501", "\(written)")
    }
}
