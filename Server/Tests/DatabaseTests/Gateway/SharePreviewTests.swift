@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

/// Previews for invitations (docs/API.md §17): `ShareMetadata.rootRecord`, as
/// CloudKit's `shouldFetchRootRecord` / `rootRecordDesiredKeys`, and the
/// share's own display fields.
@Suite("Share previews")
struct SharePreviewTests {
    @Test("an invitee sees the root's asked keys only, before accepting; a stranger gets nothing; the share's type and thumbnail round-trip")
    func rootRecordPreview() async throws {
        let harness = try await GatewayHarness.make()
        let (carol, carolToken) = try await addUser("carol", email: "carol@example.com", on: harness.endpoint)
        _ = carol
        try await harness.test { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Lists\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Lists", [
                ["recordName": "groceries", "recordType": "List", "fields": ["title": "Groceries", "secretNote": "do not show"]],
            ])
            let thumbnail = Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3]).base64EncodedString()
            let share = try await client.call("saveShare", """
                mutation($t: String) { saveShare(zoneName: "Lists", rootRecordName: "groceries", title: "Weekly shop", type: "com.example.list",
                  thumbnailImageData: $t, participants: [{email: "carol@example.com", permission: READ_ONLY}]) { url type thumbnailImageData } }
                """, ["t": thumbnail], token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            #expect(share.object["type"] as? String == "com.example.list")
            #expect(share.object["thumbnailImageData"] as? String == thumbnail)

            let document = """
                query($u: String!) { shareMetadata(url: $u) { status type thumbnailImageData
                  rootRecord(desiredKeys: ["title"]) { recordName recordType fields zone { zoneName ownerName } } } }
                """
            let invited = try await client.call("shareMetadata", document, ["u": url], token: carolToken.string)
            #expect(invited.object["status"] as? String == "PENDING", "\(invited.body)")
            let root = invited.object["rootRecord"] as? [String: Any]
            #expect(root?["recordName"] as? String == "groceries" && root?["recordType"] as? String == "List", "\(invited.body)")
            #expect(root?["fields"] as? [String: String] == ["title": "Groceries"], "only the asked keys: \(invited.body)")
            #expect((root?["zone"] as? [String: Any])?["zoneName"] as? String == "Lists")
            #expect(invited.object["type"] as? String == "com.example.list" && invited.object["thumbnailImageData"] as? String == thumbnail)
            let allKeys = try await client.call("shareMetadata", "query($u: String!) { shareMetadata(url: $u) { rootRecord { fields } } }", ["u": url], token: carolToken.string)
            #expect(((allKeys.object["rootRecord"] as? [String: Any])?["fields"] as? [String: Any])?.count == 2, "no desiredKeys: every key: \(allKeys.body)")

            let stranger = try await client.call("shareMetadata", document, ["u": url], token: harness.bobToken)
            #expect(stranger.code == "PERMISSION_FAILURE", "\(stranger.body)")

            // A requester (access requests on) sees the share, not its root.
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Lists\", rootRecordName: \"groceries\", allowsAccessRequests: true) { url } }", token: alice)
            let requester = try await client.call("shareMetadata", document, ["u": url], token: harness.bobToken)
            #expect(requester.code == nil && requester.object["rootRecord"] is NSNull, "\(requester.body)")

            // Public: anyone signed in previews it; signed out, the share page shows the root's title.
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Lists\", rootRecordName: \"groceries\", publicPermission: READ_ONLY) { url } }", token: alice)
            let publicPreview = try await client.call("shareMetadata", document, ["u": url], token: harness.bobToken)
            #expect(((publicPreview.object["rootRecord"] as? [String: Any])?["fields"] as? [String: String]) == ["title": "Groceries"], "\(publicPreview.body)")
            let path = String(url[try #require(url.range(of: "/share/")).lowerBound...])
            let page = try await client.execute(uri: path, method: .get)
            let html = String(buffer: page.body)
            #expect(html.contains("Groceries"), "the signed-out page shows the root's title")
            #expect(!html.contains("do not show"))
            #expect(html.contains("data:image/png;base64,"), "and the share's thumbnail")

            let tooBig = try await client.call("saveShare", "mutation($t: String) { saveShare(zoneName: \"Lists\", thumbnailImageData: $t) { url } }",
                                               ["t": Data(count: 300_000).base64EncodedString()], token: alice)
            #expect(tooBig.code == "LIMIT_EXCEEDED", "\(tooBig.body)")
        }
    }
}
