@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyAssets
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Testing

/// Attaching uploads to records by their tokens (docs/API.md §11), over real
/// HTTP: `POST /assets`, then `modifyRecords` with `{"type":"ASSET","uploadToken":…}`.
@Suite("Attaching assets to records")
struct AssetAttachTests {
    /// Uploads `text`; returns the upload token and the answer's sha256.
    func upload(_ client: any TestClientProtocol, _ text: String, token: String) async throws -> (String, String) {
        let response = try await client.execute(uri: "/assets", method: .post,
                                                headers: [.authorization: "Bearer \(token)", .contentType: "text/plain"],
                                                body: ByteBuffer(string: text))
        let json = try responseJSON(response.body)
        return (json["uploadToken"] as? String ?? "", json["sha256"] as? String ?? "")
    }

    /// Saves records in zone Z; returns each record's error code (nil: saved) and the saved fields by name.
    func modify(_ client: any TestClientProtocol, _ records: [[String: Any]], token: String, atomic: Bool = false, scope: String = "PRIVATE",
                owner: String? = nil, policy: String = "IF_SERVER_RECORD_UNCHANGED") async throws -> (errors: [String: String], saved: [String: [String: Any]], message: String) {
        let zone = owner.map { "{zoneName: \"Z\", ownerName: \"\($0)\"}" } ?? "{zoneName: \"Z\"}"
        let answer = try await client.call("modifyRecords", """
            mutation($s: [RecordInput!]) { modifyRecords(scope: \(scope), zone: \(zone), save: $s, atomic: \(atomic), savePolicy: \(policy)) {
              saved { recordName fields } errors { recordName code message } } }
            """, ["s": records], token: token)
        var errors: [String: String] = [:]
        var message = answer.message
        for error in answer.object["errors"] as? [[String: Any]] ?? [] {
            errors[error["recordName"] as? String ?? ""] = error["code"] as? String
            message += (error["message"] as? String ?? "") + "\n"
        }
        var saved: [String: [String: Any]] = [:]
        for record in answer.object["saved"] as? [[String: Any]] ?? [] {
            saved[record["recordName"] as? String ?? ""] = record["fields"] as? [String: Any]
        }
        return (errors, saved, message)
    }

    func asset(_ token: String) -> [String: Any] { ["type": "ASSET", "uploadToken": token] }

    func usedUploads(_ harness: GatewayHarness) async throws -> [String] {
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.texts("SELECT concat_ws(' ', size, (used_at IS NOT NULL)::text) FROM canopy.uploads ORDER BY id").compactMap { $0 }
        }
    }

    @Test("an upload token saves as the upload's digest, size and type, once; another user's, a made-up, an expired or a forged one fails the record")
    func attach() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration, live: true) { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Z\") { zoneName } }", token: harness.aliceToken)
            let (photo, digest) = try await upload(client, "a photo", token: harness.aliceToken)
            let (first, firstDigest) = try await upload(client, "page one", token: harness.aliceToken)
            let (second, _) = try await upload(client, "page two!", token: harness.aliceToken)
            let (bobs, _) = try await upload(client, "bob's file", token: harness.bobToken)

            let saved = try await modify(client, [
                ["recordName": "item", "recordType": "Item", "fields": ["name": "lamp", "photo": asset(photo)]],
                ["recordName": "folder", "recordType": "Folder", "fields": ["pages": [asset(first), asset(second)]]],
            ], token: harness.aliceToken)
            #expect(saved.errors.isEmpty, "\(saved.message)")
            let stored = saved.saved["item"]?["photo"] as? [String: Any]
            #expect(stored?["type"] as? String == "ASSET")
            #expect(stored?["sha256"] as? String == digest)
            #expect(stored?["size"] as? Int == 7)
            #expect(stored?["contentType"] as? String == "text/plain")
            #expect(stored?["uploadToken"] == nil)
            let pages = saved.saved["folder"]?["pages"] as? [[String: Any]]
            #expect(pages?.map { $0["size"] as? Int } == [8, 9])
            #expect(pages?.first?["sha256"] as? String == firstDigest)

            // Used already, someone else's, made up, not a token at all, or a digest named directly.
            let refused = try await modify(client, [
                ["recordName": "again", "recordType": "Item", "fields": ["photo": asset(photo)]],
                ["recordName": "foreign", "recordType": "Item", "fields": ["photo": asset(bobs)]],
                ["recordName": "madeup", "recordType": "Item", "fields": ["photo": asset("upl_" + String(repeating: "0", count: 64))]],
                ["recordName": "wrong", "recordType": "Item", "fields": ["photo": ["type": "ASSET", "uploadToken": 7]]],
                ["recordName": "forged", "recordType": "Item", "fields": ["photo": ["type": "ASSET", "sha256": digest, "size": 7, "contentType": "text/plain"]]],
            ], token: harness.aliceToken)
            #expect(refused.errors == ["again": "INVALID_ARGUMENTS", "foreign": "INVALID_ARGUMENTS", "madeup": "INVALID_ARGUMENTS",
                                       "wrong": "INVALID_ARGUMENTS", "forged": "INVALID_ARGUMENTS"], "\(refused.message)")
            #expect(refused.message.contains("field photo: the uploadToken was used already"), "\(refused.message)")
            #expect(refused.message.contains("field photo: the uploadToken is not one of your uploads"), "\(refused.message)")
            #expect(refused.message.contains("not by its sha256"), "\(refused.message)")

            // Saving back what was read (with whatever else a client adds, such as a downloadURL) keeps the asset.
            var readBack = stored ?? [:]
            readBack["downloadURL"] = "http://example.invalid/x"
            let resaved = try await modify(client, [
                ["recordName": "item", "recordType": "Item", "fields": ["name": "lamp 2", "photo": readBack]],
            ], token: harness.aliceToken, policy: "ALL_KEYS")
            #expect(resaved.errors.isEmpty, "\(resaved.message)")
            let url = (resaved.saved["item"]?["photo"] as? [String: Any])?["downloadURL"] as? String
            #expect(url?.hasPrefix("\(configuration.publicURL)/assets/\(digest)?") == true, "the client's URL is not kept: \(url ?? "none")")
            #expect((resaved.saved["item"]?["photo"] as? [String: Any])?["sha256"] as? String == digest)

            // CHANGED_KEYS: other fields change, the asset stays; a new token replaces it.
            let renamed = try await modify(client, [["recordName": "item", "recordType": "Item", "fields": ["name": "lamp 3"]]],
                                           token: harness.aliceToken, policy: "CHANGED_KEYS")
            #expect(renamed.errors.isEmpty, "\(renamed.message)")
            #expect((renamed.saved["item"]?["photo"] as? [String: Any])?["sha256"] as? String == digest)
            let (newPhoto, newDigest) = try await upload(client, "another photo", token: harness.aliceToken)
            let replaced = try await modify(client, [["recordName": "item", "recordType": "Item", "fields": ["photo": asset(newPhoto)]]],
                                            token: harness.aliceToken, policy: "CHANGED_KEYS")
            #expect(replaced.errors.isEmpty, "\(replaced.message)")
            #expect((replaced.saved["item"]?["photo"] as? [String: Any])?["sha256"] as? String == newDigest)
            #expect(replaced.saved["item"]?["name"] as? String == "lamp 3")

            // An expired token.
            let (late, _) = try await upload(client, "too late", token: harness.aliceToken)
            try await TestDatabase.withConnection(harness.endpoint) { connection in
                _ = try await connection.texts("UPDATE canopy.uploads SET expires_at = now() - interval '1 second' WHERE size = 8 AND used_at IS NULL")
            }
            let expired = try await modify(client, [["recordName": "late", "recordType": "Item", "fields": ["photo": asset(late)]]],
                                           token: harness.aliceToken)
            #expect(expired.errors == ["late": "INVALID_ARGUMENTS"], "\(expired.message)")
            #expect(expired.message.contains("expired"), "\(expired.message)")
        }
        let used = try await usedUploads(harness)
            #expect(used == ["7 true", "8 true", "9 true", "10 false", "13 true", "8 false"], "\(used)")
    }

    @Test("declared ASSET and LIST<ASSET> fields in production mode: saved by token, exported as declared; another type refused")
    func declared() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        let schema = """
            DEFINE SCHEMA
                RECORD TYPE Item (name STRING QUERYABLE, photo ASSET, scans LIST<ASSET>);
            """
        let applied = try schemaCommand(["apply"], file: schema, on: harness.endpoint, mode: "production")
        #expect(applied.succeeded, "\(applied.output)")
        try await harness.test(configuration: configuration, live: true, schemaMode: "production") { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Z\") { zoneName } }", token: harness.aliceToken)
            let (photo, _) = try await upload(client, "a photo", token: harness.aliceToken)
            let (scan, _) = try await upload(client, "a scan", token: harness.aliceToken)
            let saved = try await modify(client, [
                ["recordName": "lamp", "recordType": "Item", "fields": ["name": "lamp", "photo": asset(photo), "scans": [asset(scan)]]],
                ["recordName": "bad", "recordType": "Item", "fields": ["photo": "not a file"]],
            ], token: harness.aliceToken)
            #expect(saved.errors == ["bad": "INVALID_ARGUMENTS"], "\(saved.message)")
            #expect((saved.saved["lamp"]?["scans"] as? [[String: Any]])?.first?["size"] as? Int == 6)
        }
        let exported = try schemaCommand(["export"], on: harness.endpoint)
        #expect(exported.output.contains("photo ASSET"), "\(exported.output)")
        #expect(exported.output.contains("scans LIST<ASSET>"), "\(exported.output)")
    }

    @Test("an atomic batch that fails leaves its uploads unused and usable; a READ_ONLY participant cannot attach")
    func failuresLeaveUploads() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration, live: true) { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Z\") { zoneName } }", token: harness.aliceToken)
            let (photo, _) = try await upload(client, "a photo", token: harness.aliceToken)
            let failed = try await modify(client, [
                ["recordName": "good", "recordType": "Item", "fields": ["photo": asset(photo)]],
                ["recordName": "bad", "recordType": "Item", "fields": ["photo": asset("upl_nothing")]],
            ], token: harness.aliceToken, atomic: true)
            #expect(failed.errors["bad"] == "INVALID_ARGUMENTS", "\(failed.message)")
            #expect(failed.saved.isEmpty)
            let used = try await usedUploads(harness)
            #expect(used == ["7 false"], "\(used)")
            let retried = try await modify(client, [["recordName": "good", "recordType": "Item", "fields": ["photo": asset(photo)]]],
                                           token: harness.aliceToken)
            #expect(retried.errors.isEmpty, "\(retried.message)")

            // Bob, a READ_ONLY participant of Z, uploads but cannot attach.
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Z", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_ONLY}]) { url } }
                """, token: harness.aliceToken)
            let url = share.object["url"] as? String ?? ""
            _ = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: harness.bobToken)
            let (bobs, _) = try await upload(client, "bob's", token: harness.bobToken)
            let denied = try await modify(client, [["recordName": "bobs", "recordType": "Item", "fields": ["photo": asset(bobs)]]],
                                          token: harness.bobToken, scope: "SHARED", owner: harness.alice.userRecordName)
            #expect(denied.errors["bobs"] == "PERMISSION_FAILURE", "\(denied.message)")
        }
        let used = try await usedUploads(harness)
            #expect(used == ["7 true", "5 false"], "\(used)")
    }
}
