@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// The seed scenarios of the sharing issue, end to end through `/graphql`
/// with two or three users' tokens and nothing else.
@Suite("Sharing scenarios over HTTP")
struct SharingScenarioTests {
    static let shareFields = "url title publicPermission rootRecordName zone { zoneName ownerName } owner { user { userRecordName } role status } participants { user { userRecordName } email role permission status }"

    @Test("a fasting log shared zone-wide with public read-only access, fetched by another user with a sorted date range")
    func publicFastingLog() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"FastingLog\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "FastingLog", (1...8).map { fast("f\($0)", hours: $0, end: Int64($0) * 1000) })
            let shared = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "FastingLog", title: "Alice's fasts", publicPermission: READ_ONLY) { \(Self.shareFields) } }
                """, token: alice)
            let url = try #require(shared.object["url"] as? String, "\(shared.body)")
            #expect(url.hasPrefix("http://127.0.0.1:8080/share/"))
            #expect(url.count - "http://127.0.0.1:8080/share/".count >= 32)
            #expect(shared.object["publicPermission"] as? String == "READ_ONLY")
            #expect(shared.object["rootRecordName"] is NSNull)
            #expect((shared.object["owner"] as? [String: Any])?["role"] as? String == "OWNER")

            // Before accepting, bob sees the public metadata but not the zone.
            let metadata = try await client.call("shareMetadata", "{ shareMetadata(url: \"\(url)\") { title ownerName zone { zoneName } role permission status } }", token: bob)
            #expect(metadata.object["title"] as? String == "Alice's fasts")
            #expect(metadata.object["ownerName"] as? String == harness.alice.userRecordName)
            #expect(metadata.object["permission"] as? String == "READ_ONLY")
            #expect(metadata.object["role"] is NSNull)
            let zone = "{zoneName: \"FastingLog\", ownerName: \"\(harness.alice.userRecordName)\"}"
            let early = try await client.call("records", "{ records(scope: SHARED, zone: \(zone), recordType: \"Fast\") { records { recordName } } }", token: bob)
            #expect(early.code == "ZONE_NOT_FOUND")

            let accepted = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { role permission status zone { zoneName share { publicPermission } } } }", token: bob)
            #expect(accepted.object["role"] as? String == "PUBLIC_USER", "\(accepted.body)")
            #expect(accepted.object["status"] as? String == "ACCEPTED")
            let again = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: bob)
            #expect(again.object["status"] as? String == "ACCEPTED", "accepting twice is a no-op")

            let zones = try await client.call("zones", "{ zones(scope: SHARED) { zoneName ownerName share { title } } }", token: bob)
            #expect(zones.list.map { $0["zoneName"] as? String } == ["FastingLog"])
            #expect((zones.list.first?["share"] as? [String: Any])?["title"] as? String == "Alice's fasts")
            let page = try await client.call("records", """
                query($a: JSON) { records(scope: SHARED, zone: \(zone), recordType: "Fast", filter: "endDate > %@ AND endDate <= %@", args: $a, sort: [{field: "endDate", direction: DESC}]) { records { recordName } } }
                """, ["a": [["type": "TIMESTAMP", "value": 2000], ["type": "TIMESTAMP", "value": 6000]]], token: bob)
            #expect((page.object["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["f6", "f5", "f4", "f3"], "\(page.body)")
            let write = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: \(zone), save: $s) { errors { code } } }
                """, ["s": [fast("mine", hours: 1, end: 1)]], token: bob)
            #expect((write.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "PERMISSION_FAILURE")

            // Bob sees the owner and himself; alice sees everyone.
            let bobsView = try await client.call("share", "{ share(scope: SHARED, zone: \(zone)) { participants { role } } }", token: bob)
            #expect((bobsView.object["participants"] as? [[String: Any]])?.compactMap { $0["role"] as? String } == ["OWNER", "PUBLIC_USER"])

            // Turning the public link off removes public users with the next request.
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"FastingLog\", publicPermission: NONE) { publicPermission } }", token: alice)
            let after = try await client.call("records", "{ records(scope: SHARED, zone: \(zone), recordType: \"Fast\") { records { recordName } } }", token: bob)
            #expect(after.code == "ZONE_NOT_FOUND")
            let closed = try await client.call("shareMetadata", "{ shareMetadata(url: \"\(url)\") { title } }", token: bob)
            let bogus = try await client.call("shareMetadata", "{ shareMetadata(url: \"http://127.0.0.1:8080/share/\(String(repeating: "x", count: 40))\") { title } }", token: bob)
            #expect(closed.code == "PERMISSION_FAILURE" && bogus.code == "PERMISSION_FAILURE")
            #expect(closed.message == bogus.message, "a private share looks like no share at all to a stranger")
            #expect(!closed.body.description.contains("Alice's fasts"))
        }
    }

    @Test("contact groups: one group shared by email before the invitee has an account; the invitee's contact lands in the owner's zone")
    func contactGroupsByEmail() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            for group in ["Friends", "Work"] {
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"\(group)\") { zoneName } }", token: alice)
                _ = try await save(client, token: alice, zone: group, [contact("\(group)-1", name: "\(group) one")])
            }
            let shared = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Friends", participants: [{email: "Carol@Example.com", permission: READ_WRITE}]) { url participants { user { userRecordName } email role permission status } } }
                """, token: alice)
            let url = try #require(shared.object["url"] as? String, "\(shared.body)")
            let invited = (shared.object["participants"] as? [[String: Any]])?.last
            #expect(invited?["email"] as? String == "carol@example.com")
            #expect(invited?["status"] as? String == "PENDING")
            #expect(invited?["user"] is NSNull, "no account has that email yet")

            let (carol, carolToken) = try await addUser("carol", email: "carol@example.com", on: harness.endpoint)
            let zone = "{zoneName: \"Friends\", ownerName: \"\(harness.alice.userRecordName)\"}"
            let metadata = try await client.call("shareMetadata", "{ shareMetadata(url: \"\(url)\") { role permission status } }", token: carolToken.string)
            #expect(metadata.object["status"] as? String == "PENDING", "\(metadata.body)")
            #expect(metadata.object["permission"] as? String == "READ_WRITE")
            let pending = try await client.call("lookup", "{ lookup(scope: SHARED, zone: \(zone), recordNames: [\"Friends-1\"]) { recordName } }", token: carolToken.string)
            #expect(pending.code == "ZONE_NOT_FOUND", "PENDING sees nothing")

            let accepted = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { role status } }", token: carolToken.string)
            #expect(accepted.object["role"] as? String == "PRIVATE_USER" && accepted.object["status"] as? String == "ACCEPTED", "\(accepted.body)")
            let added = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: \(zone), save: $s) { saved { recordName created { userRecordName } zone { ownerName } } errors { code message } } }
                """, ["s": [contact("Friends-carol", name: "Dave")]], token: carolToken.string)
            let saved = (added.object["saved"] as? [[String: Any]])?.first
            #expect((saved?["created"] as? [String: Any])?["userRecordName"] as? String == carol.userRecordName, "\(added.body)")
            #expect((saved?["zone"] as? [String: Any])?["ownerName"] as? String == harness.alice.userRecordName)

            let owners = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Friends\"}, recordType: \"Contact\") { records { recordName } } }", token: alice)
            #expect((owners.object["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["Friends-1", "Friends-carol"])
            let work = try await client.call("lookup", "{ lookup(scope: SHARED, zone: {zoneName: \"Work\", ownerName: \"\(harness.alice.userRecordName)\"}, recordNames: [\"Work-1\"]) { recordName } }", token: carolToken.string)
            #expect(work.code == "ZONE_NOT_FOUND")
            let bound = try await client.call("share", "{ share(scope: PRIVATE, zone: {zoneName: \"Friends\"}) { participants { user { userRecordName } status } } }", token: alice)
            #expect(((bound.object["participants"] as? [[String: Any]])?.last?["user"] as? [String: Any])?["userRecordName"] as? String == carol.userRecordName)

            // A stranger learns nothing from the URL of a private share.
            let stranger = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { title } }", token: harness.bobToken)
            #expect(stranger.code == "PERMISSION_FAILURE")
        }
    }

    @Test("a person → pet → toy hierarchy shared from its root while a sibling stays private; moves in and out follow")
    func recordHierarchy() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Pets\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Pets", [
                contact("person", name: "Ann"), contact("pet", name: "Rex", parent: "person"),
                contact("toy", name: "Ball", parent: "pet"), contact("sibling", name: "Ben"),
            ])
            let shared = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Pets", rootRecordName: "person", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_WRITE}]) { url rootRecordName } }
                """, token: alice)
            let url = try #require(shared.object["url"] as? String, "\(shared.body)")
            #expect(shared.object["rootRecordName"] as? String == "person")
            let zoneWide = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Pets\") { url } }", token: alice)
            #expect(zoneWide.code == "ALREADY_SHARED", "\(zoneWide.body)")
            let nested = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Pets\", rootRecordName: \"toy\") { url } }", token: alice)
            #expect(nested.code == "ALREADY_SHARED")
            let defaultZone = try await client.call("saveShare", "mutation { saveShare(zoneName: \"_defaultZone\") { url } }", token: alice)
            #expect(defaultZone.code == "INVALID_ARGUMENTS")

            _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: bob)
            let zone = "{zoneName: \"Pets\", ownerName: \"\(harness.alice.userRecordName)\"}"
            func visible() async throws -> [String] {
                let answer = try await client.call("lookup", "{ lookup(scope: SHARED, zone: \(zone), recordNames: [\"person\", \"pet\", \"toy\", \"sibling\", \"toy2\"]) { recordName record { recordName } } }", token: bob)
                return answer.list.filter { !($0["record"] is NSNull) }.compactMap { $0["recordName"] as? String }
            }
            #expect(try await visible() == ["person", "pet", "toy"])
            let root = try await client.call("lookup", "{ lookup(scope: SHARED, zone: \(zone), recordNames: [\"person\", \"pet\"]) { record { share { rootRecordName participants { role } } } } }", token: bob)
            let shares = root.list.map { ($0["record"] as? [String: Any])?["share"] }
            #expect((shares.first as? [String: Any])?["rootRecordName"] as? String == "person", "\(root.body)")
            #expect(shares.last! is NSNull, "Record.share is set on the root only")

            // The owner adds a toy under the pet, and moves the first toy out.
            _ = try await save(client, token: alice, zone: "Pets", [contact("toy2", name: "Rope", parent: "pet")])
            let toy = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Pets\"}, recordNames: [\"toy\"]) { record { recordChangeTag } } }", token: alice)
            let tag = try #require((toy.list.first?["record"] as? [String: Any])?["recordChangeTag"] as? String)
            _ = try await save(client, token: alice, zone: "Pets", [contact("toy", name: "Ball", parent: "sibling", tag: tag)])
            #expect(try await visible() == ["person", "pet", "toy2"])

            // A new record from the participant must hang inside the share.
            let outside = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: \(zone), save: $s) { errors { code } } }
                """, ["s": [contact("stray", name: "Stray")]], token: bob)
            #expect((outside.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "PERMISSION_FAILURE", "\(outside.body)")
            let inside = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: \(zone), save: $s) { saved { recordName } errors { code } } }
                """, ["s": [contact("toy3", name: "Bone", parent: "pet")]], token: bob)
            #expect((inside.object["saved"] as? [[String: Any]])?.count == 1, "\(inside.body)")

            // Bob deleting the root in SHARED scope leaves; alice's records stay.
            let leave = try await client.call("modifyRecords", "mutation { modifyRecords(scope: SHARED, zone: \(zone), delete: [\"person\"]) { deleted errors { code } } }", token: bob)
            #expect(leave.object["deleted"] as? [String] == ["person"], "\(leave.body)")
            let gone = try await client.call("lookup", "{ lookup(scope: SHARED, zone: \(zone), recordNames: [\"person\"]) { recordName } }", token: bob)
            #expect(gone.code == "ZONE_NOT_FOUND")
            let owners = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Pets\"}, recordNames: [\"person\", \"toy3\"]) { record { recordName } } }", token: alice)
            #expect(owners.list.allSatisfy { !($0["record"] is NSNull) })

            // The owner deleting the root deletes the share.
            let deleted = try await client.call("modifyRecords", "mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Pets\"}, delete: [\"person\"]) { deleted } }", token: alice)
            #expect(deleted.object["deleted"] as? [String] == ["person"])
            let none = try await client.call("share", "{ share(scope: PRIVATE, zone: {zoneName: \"Pets\"}, rootRecordName: \"pet\") { url } }", token: alice)
            #expect(none.data is NSNull, "\(none.body)")
            let metadata = try await client.call("shareMetadata", "{ shareMetadata(url: \"\(url)\") { title } }", token: alice)
            #expect(metadata.code == "PERMISSION_FAILURE", "the old URL leads nowhere")
        }
    }
}

@Suite("Share URLs in a browser")
struct SharePageTests {
    @Test("GET /share/<token> shows a public share's title, owner, kind and permission under a strict CSP, and the same page without them for a private or unknown share")
    func page() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            var urls: [String] = []
            for (zone, permission) in [("Open", "READ_ONLY"), ("Closed", "NONE")] {
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"\(zone)\") { zoneName } }", token: alice)
                let share = try await client.call("saveShare", "mutation { saveShare(zoneName: \"\(zone)\", title: \"<\(zone)> & co\", publicPermission: \(permission)) { url } }", token: alice)
                urls.append(try #require(share.object["url"] as? String))
            }
            func page(_ url: String) async throws -> (HTTPResponse.Status, String, HTTPFields) {
                let path = String(url.dropFirst("http://127.0.0.1:8080".count))
                let response = try await client.execute(uri: path, method: .get, headers: [:])
                return (response.status, String(buffer: response.body), response.headers)
            }
            let (status, open, headers) = try await page(urls[0])
            #expect(status == .ok)
            #expect(headers[.contentType] == "text/html; charset=utf-8")
            #expect(headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true)
            #expect(headers[.contentSecurityPolicy]?.contains("unsafe-inline") == false)
            #expect(headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer", "the page's URL holds the share's token")
            #expect(open.contains("<h1 id=\"share-title\">&lt;Open&gt; &amp; co</h1>"), "the title, escaped: \(open)")
            #expect(open.contains("alice shared a zone and every record in it. Anyone with this link can view it."), "\(open)")
            #expect(open.contains("<script type=\"module\" src=\"/console/invitation.js\">"))
            #expect(!open.contains("<script>") && !open.contains("style="), "no inline script or style (the CSP forbids them)")
            #expect(open.contains("acceptShare(url:)"))
            let (_, closed, _) = try await page(urls[1])
            #expect(!closed.contains("Closed") && !closed.contains("alice"), "nothing of a private share: \(closed)")
            let unknown = try await page("http://127.0.0.1:8080/share/" + String(repeating: "A", count: 43))
            #expect(closed.replacingOccurrences(of: urls[1], with: "URL") == unknown.1.replacingOccurrences(of: "http://127.0.0.1:8080/share/" + String(repeating: "A", count: 43), with: "URL"),
                    "a private share's page is the unknown share's page")
        }
    }

    @Test("shareMetadata names the owner (ownerDisplayName) to those who may open the share, and to nobody else")
    func ownerDisplayName() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Named\") { zoneName } }", token: harness.aliceToken)
            let share = try await client.call("saveShare", "mutation($bob: String) { saveShare(zoneName: \"Named\", participants: [{userRecordName: $bob, permission: READ_ONLY}]) { url } }",
                                              ["bob": harness.bob.userRecordName], token: harness.aliceToken)
            let url = try #require(share.object["url"] as? String)
            let query = "query($url: String!) { shareMetadata(url: $url) { ownerDisplayName ownerName permission status } }"
            let invited = try await client.call("shareMetadata", query, ["url": url], token: harness.bobToken)
            #expect(invited.object["ownerDisplayName"] as? String == "alice")
            #expect(invited.object["status"] as? String == "PENDING")
            let (_, carolToken) = try await addUser("carol", on: harness.endpoint)
            let (_, stranger) = try await client.graphql(query, variables: ["url": url], token: carolToken.string)
            #expect(errorCode(stranger) == "PERMISSION_FAILURE")
            #expect(!"\(stranger)".contains("alice"), "nothing of the owner for a stranger: \(stranger)")
        }
    }
}

