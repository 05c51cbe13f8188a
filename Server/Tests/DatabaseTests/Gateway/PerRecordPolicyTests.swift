@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import Testing

/// Canopy's GraphQL additions for CloudKit Web Services' operation types
/// (DECISIONS 89), asked over GraphQL: a save policy per record, the tag-
/// checked merge, deletes at a tag; and `discoverUser { name }`.
@Suite("Per-record save policies and deletes at a tag")
struct PerRecordPolicyTests {
    static let modify = """
        mutation($s: [RecordInput!], $d: [RecordVersion!], $atomic: Boolean) {
          modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: $s, deleteIfUnchanged: $d, atomic: $atomic) {
            saved { recordName recordChangeTag fields } deleted errors { recordName code serverRecord { recordChangeTag } } } }
        """

    @Test("IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS checks the tag and merges; a policy per record mixes with the batch's; deleteIfUnchanged deletes only at the tag")
    func policies() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            let made = try await client.call("modifyRecords", Self.modify, ["s": [
                ["recordName": "a", "recordType": "Note", "fields": ["title": "A", "body": "first"]],
                ["recordName": "b", "recordType": "Note", "fields": ["title": "B"]],
            ]], token: alice)
            let saved = made.object["saved"] as? [[String: Any]] ?? []
            let tags = Dictionary(uniqueKeysWithValues: saved.compactMap { record in
                (record["recordName"] as? String).map { ($0, record["recordChangeTag"] as? String ?? "") }
            })
            #expect(tags.count == 2, "\(made.body)")
            // a: the tag checked, only body changed; b: CHANGED_KEYS without a tag, in the same batch.
            let mixed = try await client.call("modifyRecords", Self.modify, ["s": [
                ["recordName": "a", "recordType": "Note", "fields": ["body": "second"], "recordChangeTag": tags["a"]!, "savePolicy": "IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS"],
                ["recordName": "b", "recordType": "Note", "fields": ["extra": 1], "savePolicy": "CHANGED_KEYS"],
            ]], token: alice)
            let after = Dictionary(uniqueKeysWithValues: (mixed.object["saved"] as? [[String: Any]] ?? []).compactMap { record in
                (record["recordName"] as? String).map { ($0, record) }
            })
            #expect((after["a"]?["fields"] as? [String: Any])?["title"] as? String == "A", "merged: \(mixed.body)")
            #expect((after["a"]?["fields"] as? [String: Any])?["body"] as? String == "second")
            #expect((after["b"]?["fields"] as? [String: Any])?["title"] as? String == "B" && (after["b"]?["fields"] as? [String: Any])?["extra"] as? Int == 1)
            // The old tag again: SERVER_RECORD_CHANGED with the server's record.
            let stale = try await client.call("modifyRecords", Self.modify, ["s": [
                ["recordName": "a", "recordType": "Note", "fields": ["body": "third"], "recordChangeTag": tags["a"]!, "savePolicy": "IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS"],
            ]], token: alice)
            let error = (stale.object["errors"] as? [[String: Any]])?.first
            #expect(error?["code"] as? String == "SERVER_RECORD_CHANGED" && (error?["serverRecord"] as? [String: Any])?["recordChangeTag"] as? String == after["a"]?["recordChangeTag"] as? String, "\(stale.body)")
            // Deletes at a tag: the stale one refused, the current one done.
            let staleDelete = try await client.call("modifyRecords", Self.modify, ["d": [["recordName": "a", "recordChangeTag": tags["a"]!]]], token: alice)
            #expect((staleDelete.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "SERVER_RECORD_CHANGED", "\(staleDelete.body)")
            let currentTag = try #require(after["a"]?["recordChangeTag"] as? String)
            let deleted = try await client.call("modifyRecords", Self.modify, ["d": [["recordName": "a", "recordChangeTag": currentTag]]], token: alice)
            #expect(deleted.object["deleted"] as? [String] == ["a"], "\(deleted.body)")
            let missing = try await client.call("modifyRecords", Self.modify, ["d": [["recordName": "a", "recordChangeTag": currentTag]]], token: alice)
            #expect((missing.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "UNKNOWN_ITEM", "\(missing.body)")
        }
    }

    @Test("discoverUser answers the user's name (display name, else name)")
    func discoverName() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let found = try await client.call("discoverUser", #"{ discoverUser(email: "alice@example.com") { userRecordName name email } }"#, token: harness.bobToken)
            #expect(found.object["name"] as? String == "alice" && found.object["userRecordName"] as? String == harness.alice.userRecordName, "\(found.body)")
        }
    }
}
