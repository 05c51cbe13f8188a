@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 35, part 3: the server's signing keys rotate with an overlap
/// window (`canopy secrets rotate NAME`, docs/SECURITY.md "Rotating the
/// server's secrets"). What an old key signed is accepted during the
/// window and refused after; what is signed after the rotation uses the
/// new key.
@Suite("Rotating the server's secrets", .serialized, .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct SecretRotationTests {
    /// A change token, a records cursor and a download URL, as a client holds them.
    struct Held: Sendable {
        var changeToken: String
        var cursor: String
        var downloadPath: String
    }

    func hold(_ client: any TestClientProtocol, _ harness: GatewayHarness) async throws -> Held {
        let (page, answer) = try await client.zoneChanges("Z", since: nil, token: harness.aliceToken)
        let changeToken = try #require(page?.token, "\(answer.body)")
        let records = try await client.call("records", """
            { records(scope: PRIVATE, zone: {zoneName: "Z"}, recordType: "Doc", limit: 1) { records { recordName } cursor } }
            """, token: harness.aliceToken)
        let cursor = try #require(records.object["cursor"] as? String, "\(records.body)")
        let lookup = try await client.call("lookup", """
            { lookup(scope: PRIVATE, zone: {zoneName: "Z"}, recordNames: ["doc0"]) { record { fields } } }
            """, token: harness.aliceToken)
        let fields = (lookup.list.first?["record"] as? [String: Any])?["fields"] as? [String: Any]
        let url = try #require((fields?["file"] as? [String: Any])?["downloadURL"] as? String, "\(lookup.body)")
        let path = String(url[try #require(url.range(of: "/assets/")).lowerBound...])
        return Held(changeToken: changeToken, cursor: cursor, downloadPath: path)
    }

    /// Whether each held value is accepted now: the feed answers a page,
    /// the cursor a page, the URL the bytes. A change token refused for
    /// age must say CHANGE_TOKEN_EXPIRED.
    func accepted(_ held: Held, _ client: any TestClientProtocol, _ harness: GatewayHarness) async throws -> (feed: Bool, cursor: Bool, download: Bool) {
        let (page, feed) = try await client.zoneChanges("Z", since: held.changeToken, token: harness.aliceToken)
        if page == nil { #expect(feed.code == "CHANGE_TOKEN_EXPIRED", "\(feed.body)") }
        let records = try await client.call("records", """
            query($c: String) { records(scope: PRIVATE, zone: {zoneName: "Z"}, recordType: "Doc", cursor: $c, limit: 1) { records { recordName } } }
            """, ["c": held.cursor], token: harness.aliceToken)
        if records.code != nil { #expect(records.code == "INVALID_ARGUMENTS", "\(records.body)") }
        let download = try await client.execute(uri: held.downloadPath, method: .get, headers: [:])
        return (page != nil, records.code == nil, download.status == .ok)
    }

    @Test("cursor, change-token and asset-url keys rotated: what the old keys signed is accepted for the window, then refused (a change token as CHANGE_TOKEN_EXPIRED); what is signed after uses the new keys and stays accepted")
    func rotation() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration) { client, database in
            await database.secrets.setRefreshInterval(.zero)
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Z\") { zoneName } }", token: harness.aliceToken)
            let uploaded = try await client.execute(uri: "/assets", method: .post,
                                                    headers: [.authorization: "Bearer \(harness.aliceToken)", .contentType: "text/plain"],
                                                    body: ByteBuffer(string: "rotating"))
            let upload = try responseJSON(uploaded.body)["uploadToken"] as? String ?? ""
            _ = try await save(client, token: harness.aliceToken, zone: "Z", (0..<3).map { index in
                ["recordName": "doc\(index)", "recordType": "Doc", "fields": index == 0 ? ["file": ["type": "ASSET", "uploadToken": upload]] : [:]]
            })
            let before = try await hold(client, harness)
            let fresh = try await accepted(before, client, harness)
            #expect(fresh == (true, true, true), "not accepted before any rotation: \(fresh)")

            let windowEnds = try await TestDatabase.withConnection(harness.endpoint) { connection in
                var last = Date()
                for name in ["cursor", "change-token", "asset-url"] {
                    last = try await SecretRotation.rotate(name, overlap: .seconds(8), allowShortOverlap: true, connection: connection, logger: TestDatabase.logger) ?? last
                }
                return last
            }
            let during = try await accepted(before, client, harness)
            let after = try await hold(client, harness)
            #expect(after.cursor != before.cursor && after.downloadPath != before.downloadPath, "signed with the old keys after the rotation")
            if Date() < windowEnds.addingTimeInterval(-1) {
                #expect(during == (true, true, true), "refused inside the overlap window: \(during)")
            }

            let refused = await eventually(timeout: .seconds(60)) {
                (try? await accepted(before, client, harness)).map { $0 == (false, false, false) } ?? false
            }
            #expect(refused, "the old keys' values were still accepted after the window")
            let late = try await accepted(after, client, harness)
            #expect(late == (true, true, true), "the new keys' values were refused: \(late)")
        }
    }

    @Test("canopy secrets: rotate refuses an unknown name and a window under a minute, with why; list shows names and dates, never a key")
    func command() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let unknown = try CanopyBinary.run(["secrets", "rotate", "signing", "--database-url", endpoint.url])
        #expect(unknown.succeeded == false && unknown.output.contains("asset-url, change-token, cursor, vapid"), "\(unknown.output)")
        let short = try CanopyBinary.run(["secrets", "rotate", "cursor", "--overlap", "30s", "--database-url", endpoint.url])
        #expect(short.succeeded == false && short.output.contains("at least 60s"), "\(short.output)")
        let made = try CanopyBinary.run(["secrets", "rotate", "cursor", "--database-url", endpoint.url])
        #expect(made.succeeded && made.output.contains("it had no key yet"), "\(made.output)")
        let rotated = try CanopyBinary.run(["secrets", "rotate", "cursor", "--overlap", "2h", "--database-url", endpoint.url])
        #expect(rotated.succeeded && rotated.output.contains("the old key is accepted until"), "\(rotated.output)")
        let listed = try CanopyBinary.run(["secrets", "list", "--database-url", endpoint.url])
        #expect(listed.succeeded && listed.output.contains("cursor@rotated:1") && listed.output.contains("accepted until"), "\(listed.output)")
        let keys = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.query("SELECT encode(secret, 'hex') FROM canopy.server_secrets", logger: TestDatabase.logger).collect()
                .map { try $0.decode(String.self) }
        }
        #expect(!keys.isEmpty && keys.allSatisfy { !listed.output.contains($0) }, "a key was printed")
    }
}
