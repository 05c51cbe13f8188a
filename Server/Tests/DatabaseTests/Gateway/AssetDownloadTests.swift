@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyAssets
import CanopyEncoding
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Download URLs (docs/API.md §11) over real HTTP: handed out with a record to
/// whoever may read it, signed and expiring, and served from the store
/// with `Range`, `ETag` and `If-None-Match`, without `Authorization`.
@Suite("Downloading assets")
struct AssetDownloadTests: AssetDownloading {

    @Test("whoever may read the record gets a URL that serves the bytes without a token, with Range, ETag and 304; a stranger gets none")
    func download() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (stranger, strangerToken) = try await addUser("stranger", on: harness.endpoint)
        _ = stranger
        try await harness.test(configuration: configuration, live: true) { client in
            let digest = try await seed(client, harness)
            let asset = try #require(try await read(client, harness, token: harness.aliceToken))
            let url = try #require(asset["downloadURL"] as? String)
            #expect(url.hasPrefix("\(configuration.publicURL)/assets/\(digest)?"), "\(url)")
            #expect(asset["sha256"] as? String == digest && asset["size"] as? Int == Self.text.utf8.count)

            let whole = try await get(client, path(url))
            #expect(whole.status == .ok)
            #expect(whole.body == Self.text)
            #expect(whole.headers[.contentType] == "text/plain; charset=utf-8")
            #expect(whole.headers[.eTag] == "\"\(digest)\"")
            #expect(whole.headers[.contentLength] == String(Self.text.utf8.count))
            // The console shares this origin: a download is never run as a page there.
            #expect(whole.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            #expect(whole.headers[.contentSecurityPolicy] == "default-src 'none'; sandbox")
            #expect(whole.headers[.contentDisposition] == "attachment", "only raster pictures are shown inline")

            let part = try await get(client, path(url), headers: [.range: "bytes=2-4"])
            #expect(part.status == .partialContent)
            #expect(part.body == "234")
            #expect(part.headers[.contentRange] == "bytes 2-4/20")
            let tail = try await get(client, path(url), headers: [.range: "bytes=-3"])
            #expect(tail.status == .partialContent && tail.body == "hij")
            let outside = try await get(client, path(url), headers: [.range: "bytes=20-30"])
            #expect(outside.status == .rangeNotSatisfiable)
            #expect(outside.headers[.contentRange] == "bytes */20")
            let cached = try await get(client, path(url), headers: [.ifNoneMatch: "\"\(digest)\""])
            #expect(cached.status == .notModified && cached.body.isEmpty)

            // The change feed hands the record out with its URL too.
            let changes = try await client.call("zoneChanges", """
                { zoneChanges(scope: PRIVATE, zone: {zoneName: "Z"}) { changed { recordName fields } } }
                """, token: harness.aliceToken)
            let changed = (changes.object["changed"] as? [[String: Any]])?.first { $0["recordName"] as? String == "doc" }
            let fed = ((changed?["fields"] as? [String: Any])?["file"] as? [String: Any])?["downloadURL"] as? String
            #expect(try await get(client, path(fed ?? "")).body == Self.text, "\(changes.body)")

            // Bob, a READ_ONLY participant, reads the record and downloads.
            let bobs = try #require(try await read(client, harness, token: harness.bobToken, shared: true)?["downloadURL"] as? String)
            #expect(try await get(client, path(bobs)).body == Self.text)
            // A stranger cannot read the record, so gets no URL.
            let lookup = try await client.call("lookup", """
                { lookup(scope: SHARED, zone: {zoneName: "Z", ownerName: "\(harness.alice.userRecordName)"}, recordNames: ["doc"]) { record { fields } } }
                """, token: strangerToken.string)
            #expect(!"\(lookup.body)".contains("downloadURL"), "\(lookup.body)")
        }
    }

    @Test("issue 64: a look-alike of an asset is never signed: STRING fields named type and sha256, aliases shaped like one, in private and public records, read signed in or not")
    func lookAlikesGetNoURL() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (_, strangerToken) = try await addUser("mallory", on: harness.endpoint)
        try await harness.test(configuration: configuration, live: true) { client in
            // Alice's private file, whose digest the stranger knows.
            let digest = try await seed(client, harness)
            let mallory = strangerToken.string
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"M\") { zoneName } }", token: mallory)
            let lookAlike: [String: Any] = ["type": "ASSET", "sha256": digest, "contentType": "text/plain; charset=utf-8"]
            let saved = try await save(client, token: mallory, zone: "M", [
                ["recordName": "plain", "recordType": "Note", "fields": lookAlike],
                ["recordName": digest, "recordType": "ASSET", "fields": ["contentType": "text/plain; charset=utf-8"]],
            ])
            #expect(saved.count == 2)
            var answers: [String] = []
            answers.append("\(try await client.call("lookup", """
                { lookup(scope: PRIVATE, zone: {zoneName: "M"}, recordNames: ["plain", "\(digest)"]) { record { fields } } }
                """, token: mallory).body)")
            // Aliases that give an object the members an asset has.
            answers.append("\(try await client.call("lookup", """
                { lookup(scope: PRIVATE, zone: {zoneName: "M"}, recordNames: ["\(digest)"]) { record { type: recordType sha256: recordName fields } } }
                """, token: mallory).body)")
            answers.append("\(try await client.call("zoneChanges", """
                { zoneChanges(scope: PRIVATE, zone: {zoneName: "M"}) { changed { type: recordType sha256: recordName fields } } }
                """, token: mallory).body)")
            // The same through a public record, read by nobody.
            let publicSave = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, save: $s) { errors { code message } } }
                """, ["s": [["recordName": "bait", "recordType": "Poster", "fields": lookAlike]]], token: mallory)
            #expect((publicSave.object["errors"] as? [Any])?.isEmpty == true, "\(publicSave.body)")
            var headers: HTTPFields = [.contentType: "application/json"]
            headers[.accept] = "application/json"
            let anonymous = try await client.execute(uri: "/graphql", method: .post, headers: headers, body: ByteBuffer(string: """
                {"query": "{ lookup(scope: PUBLIC, zone: {zoneName: \\"_defaultZone\\"}, recordNames: [\\"bait\\"]) { record { type: recordType sha256: recordName fields } } }"}
                """))
            #expect(anonymous.status == .ok)
            answers.append(String(buffer: anonymous.body))
            for answer in answers {
                #expect(answer.contains(digest), "the look-alike was read: \(answer)")
                #expect(!answer.contains("downloadURL"), "\(answer)")
                #expect(!answer.contains(AssetMarker.prefix), "a mark left the gateway: \(answer)")
            }
            // Alice's own read still signs her real file, with no mark.
            let real = try #require(try await read(client, harness, token: harness.aliceToken))
            #expect(real["sha256"] as? String == digest)
            let url = try #require(real["downloadURL"] as? String)
            #expect(try await get(client, path(url)).body == Self.text)
        }
    }

    @Test("an asset on a public record (issue 36): attached by its creator, and its URL handed to a request without a token, which it serves")
    func publicRecordAsset() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration) { client in
            let uploaded = try await client.execute(uri: "/assets", method: .post,
                                                    headers: [.authorization: "Bearer \(harness.aliceToken)", .contentType: "text/plain; charset=utf-8"],
                                                    body: ByteBuffer(string: Self.text))
            let token = try responseJSON(uploaded.body)["uploadToken"] as? String ?? ""
            let saved = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, save: $s) { errors { code message } } }
                """, ["s": [["recordName": "flyer", "recordType": "Poster", "fields": ["file": ["type": "ASSET", "uploadToken": token]]]]], token: harness.aliceToken)
            #expect((saved.object["errors"] as? [Any])?.isEmpty == true, "\(saved.body)")
            var headers: HTTPFields = [.contentType: "application/json"]
            headers[.accept] = "application/json"
            let anonymous = try await client.execute(uri: "/graphql", method: .post, headers: headers, body: ByteBuffer(string: """
                {"query": "{ lookup(scope: PUBLIC, zone: {zoneName: \\"_defaultZone\\"}, recordNames: [\\"flyer\\"]) { record { fields } } }"}
                """))
            let body = try responseJSON(anonymous.body)
            let record = (((body["data"] as? [String: Any])?["lookup"] as? [[String: Any]])?.first?["record"] as? [String: Any])
            let url = try #require(((record?["fields"] as? [String: Any])?["file"] as? [String: Any])?["downloadURL"] as? String, "\(body)")
            let fetched = try await get(client, path(url))
            #expect(fetched.status == .ok && fetched.body == Self.text)
        }
    }

    @Test("a URL with its signature, expiry, type or digest changed, or none, is refused; an expired one too")
    func refused() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration, live: true) { client in
            let digest = try await seed(client, harness)
            let url = path(try #require(try await read(client, harness, token: harness.aliceToken)?["downloadURL"] as? String))
            let signature = try #require(url.split(separator: "signature=").last.map(String.init))
            let flipped = String(signature.dropLast()) + (signature.hasSuffix("0") ? "1" : "0")
            let expires = try #require(url.split(separator: "expires=").last?.split(separator: "&").first.map(String.init))
            for changed in [
                url.replacingOccurrences(of: signature, with: flipped),
                url.replacingOccurrences(of: "expires=\(expires)", with: "expires=\(Int64(expires)! + 3600)"),
                url.replacingOccurrences(of: "type=text", with: "type=image"),
                url.replacingOccurrences(of: digest, with: String(repeating: "0", count: 64)),
            ] {
                #expect(try await get(client, changed).status == .forbidden, "\(changed)")
            }
            #expect(try await get(client, "/assets/\(digest)").status == .badRequest)
        }
        let (expiredHarness, expiredConfiguration, expiredDirectory) = try await GatewayHarness.withAssets(lifetime: -1)
        defer { try? FileManager.default.removeItem(at: expiredDirectory) }
        try await expiredHarness.test(configuration: expiredConfiguration, live: true) { client in
            _ = try await seed(client, expiredHarness)
            let url = path(try #require(try await read(client, expiredHarness, token: expiredHarness.aliceToken)?["downloadURL"] as? String))
            #expect(try await get(client, url).status == .forbidden)
        }
    }
}
