@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import HummingbirdTesting
import Testing

/// Issue 35's rows of docs/SECURITY.md that are about people rather than
/// packets: invitations capped per user per day, tokens never taken from a
/// URL, and answers that do not tell an existing thing from a hidden one.
@Suite("Abuse at the perimeter")
struct AbuseAtThePerimeterTests {
    func invite(_ client: any TestClientProtocol, _ email: String, token: String) async throws -> Answer {
        try await client.call("setParticipant", """
            mutation { setParticipant(zoneName: "Team", participant: {email: "\(email)", permission: READ_ONLY}) { url } }
            """, token: token)
    }

    @Test("invitations are capped per user per day (canopy.daily_quotas): past the cap LIMIT_EXCEEDED saying so, nothing added; changing an invitation does not count; another user has their own count; the gateway cannot read or reset the counts")
    func invitationCap() async throws {
        let harness = try await GatewayHarness.make()
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            _ = try await connection.texts("UPDATE canopy.daily_quotas SET per_day = 3 WHERE action = 'invitation' RETURNING action")
        }
        try await harness.test { client in
            for token in [harness.aliceToken, harness.bobToken] {
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: token)
                _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Team\") { url } }", token: token)
            }
            for index in 1...3 {
                let answer = try await invite(client, "guest\(index)@example.com", token: harness.aliceToken)
                #expect(answer.code == nil, "\(answer.body)")
            }
            let changed = try await client.call("setParticipant", """
                mutation { setParticipant(zoneName: "Team", participant: {email: "guest1@example.com", permission: READ_WRITE}) { url } }
                """, token: harness.aliceToken)
            #expect(changed.code == nil, "changing an invitation counted: \(changed.body)")
            let fourth = try await invite(client, "guest4@example.com", token: harness.aliceToken)
            #expect(fourth.code == "LIMIT_EXCEEDED" && fourth.message.contains("limit of 3 invitations"), "\(fourth.body)")
            let share = try await client.call("share", "{ share(scope: PRIVATE, zone: {zoneName: \"Team\"}) { participants { email } } }", token: harness.aliceToken)
            let emails = (share.object["participants"] as? [[String: Any]] ?? []).compactMap { $0["email"] as? String }
            #expect(!emails.contains("guest4@example.com") && Set(["guest1@example.com", "guest2@example.com", "guest3@example.com"]).isSubset(of: Set(emails)), "\(share.body)")
            let bobs = try await invite(client, "guest9@example.com", token: harness.bobToken)
            #expect(bobs.code == nil, "another user's count was shared: \(bobs.body)")
        }
        try await TestDatabase.withConnection(harness.endpoint.asUser("canopy_gateway", password: nil)) { connection in
            let statements: [(String, PostgresQuery)] = [
                ("read", "SELECT count(*)::text FROM canopy.daily_quota_use"),
                ("raise the cap", "UPDATE canopy.daily_quotas SET per_day = 1000000 RETURNING action"),
                ("reset", "DELETE FROM canopy.daily_quota_use RETURNING action"),
            ]
            for (what, statement) in statements {
                await #expect(throws: (any Error).self, "the gateway could \(what)") { _ = try await connection.texts(statement) }
            }
        }
    }

    @Test("a token in a URL's query string is never taken: /graphql and /assets answer 401 as if none were sent")
    func noTokenInURL() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration) { client in
            let token = harness.aliceToken
            let query = "%7B%20me%20%7B%20name%20%7D%20%7D"
            for name in ["access_token", "token", "authorization", "bearer", "auth"] {
                let get = try await client.execute(uri: "/graphql?query=\(query)&\(name)=\(token)", method: .get)
                #expect(get.status == .unauthorized, "GET /graphql with ?\(name)=: \(get.status)")
                let post = try await client.execute(uri: "/graphql?\(name)=\(token)", method: .post, headers: [.contentType: "application/json"],
                                                    body: ByteBuffer(string: #"{"query": "{ me { name } }"}"#))
                #expect(post.status == .unauthorized, "POST /graphql with ?\(name)=: \(post.status)")
                let upload = try await client.execute(uri: "/assets?\(name)=\(token)", method: .post, headers: [.contentType: "text/plain"],
                                                      body: ByteBuffer(string: "x"))
                #expect(upload.status == .unauthorized, "POST /assets with ?\(name)=: \(upload.status)")
            }
        }
    }

    @Test("answers do not tell what exists from what is hidden: a zone not shared with the caller and no zone at all, a share link that is private and none at all, read alike")
    func noEnumerationByErrors() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Secret\") { zoneName } }", token: alice)
            let hidden = try await client.zoneChanges("Secret", scope: "SHARED", owner: harness.alice.userRecordName, since: nil, token: bob)
            let missing = try await client.zoneChanges("Nothing", scope: "SHARED", owner: harness.alice.userRecordName, since: nil, token: bob)
            let nobody = try await client.zoneChanges("Secret", scope: "SHARED", owner: "_0000000000000000000000000000000a", since: nil, token: bob)
            #expect(hidden.0 == nil && hidden.1.code == "ZONE_NOT_FOUND", "\(hidden.1.body)")
            for other in [missing.1, nobody.1] {
                #expect(other.code == hidden.1.code && normalized(other.message, "Nothing", "_0000000000000000000000000000000a") == normalized(hidden.1.message, "Secret", harness.alice.userRecordName),
                        "\(hidden.1.body) against \(other.body)")
            }
            let record = "{ lookup(scope: SHARED, zone: {zoneName: \"Secret\", ownerName: \"\(harness.alice.userRecordName)\"}, recordNames: [\"x\"]) { recordName } }"
            let lookedUp = try await client.call("lookup", record, token: bob)
            #expect(lookedUp.code == "ZONE_NOT_FOUND", "\(lookedUp.body)")

            let share = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Secret\") { url } }", token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            let privateShare = try await client.call("shareMetadata", "query($u: String!) { shareMetadata(url: $u) { title } }", ["u": url], token: bob)
            let forged = String(url.dropLast(4)) + "AAAA"
            let noShare = try await client.call("shareMetadata", "query($u: String!) { shareMetadata(url: $u) { title } }", ["u": forged], token: bob)
            #expect(privateShare.code != nil && privateShare.code == noShare.code && privateShare.message == noShare.message,
                    "\(privateShare.body) against \(noShare.body)")
        }
    }

    /// A message with the names it echoes taken out.
    func normalized(_ message: String, _ names: String...) -> String {
        names.reduce(message) { $0.replacingOccurrences(of: $1, with: "<name>") }
    }
}
