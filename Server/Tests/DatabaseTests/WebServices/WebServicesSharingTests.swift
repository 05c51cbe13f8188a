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
import NIOCore
import Testing

/// Shares as cloudkit.share records, records/resolve and records/accept,
/// and the two-step asset upload, through Web Services over real HTTP.
@Suite("Web Services: shares and assets", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesSharingTests {
    @Test("the reference's share example: a cloudkit.share record for RecordA, resolved and accepted by the invitee, then deleted")
    func shareRecord() async throws {
        let harness = try await GatewayHarness.make()
        let (gkumar, gkumarToken) = try await addUser("gkumar", email: "gkumar@mac.com", on: harness.endpoint)
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String, as webToken: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: webToken)
            }
            _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "myCustomZone"}}}]}"#, as: harness.aliceToken)
            let made = try await call("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordName": "RecordA", "recordType": "myType", "fields": {"title": {"value": "A"}}}}], "zoneID": {"zoneName": "myCustomZone"}}"#, as: harness.aliceToken)
            let tag = try #require(made.records.first?["recordChangeTag"] as? String, "\(made.body)")
            // The reference's example, as it is (gkumar@mac.com is a user here).
            let shared = try await call("private/records/modify", """
                {
                "operations": [{
                "operationType": "create",
                "record": {
                "recordType": "cloudkit.share",
                "fields": {},
                "forRecord": {
                "recordName": "RecordA",
                "recordChangeTag": "\(tag)"
                },
                "publicPermission": "NONE",
                "participants": [{
                "type": "USER",
                "permission": "READ_WRITE",
                "acceptanceStatus": "INVITED",
                "userIdentity": {
                "lookupInfo": {
                "emailAddress": "gkumar@mac.com"
                }
                }
                }]
                }
                }],
                "zoneID": {
                "zoneName": "myCustomZone"
                }
                }
                """, as: harness.aliceToken)
            let share = try #require(shared.records.first, "\(shared.body)")
            #expect(share["recordType"] as? String == "cloudkit.share" && share["publicPermission"] as? String == "NONE", "\(share)")
            #expect((share["share"] as? [String: Any])?["recordName"] as? String == "RecordA", "\(share)")
            let shortGUID = try #require((share["shortGUID"] as? [String: Any])?["value"] as? String, "a ShortGUID Dictionary: \(share)")
            let me = share["currentUserParticipant"] as? [String: Any]
            #expect(me?["type"] as? String == "OWNER" && (me?["userIdentity"] as? [String: Any])?["userRecordName"] as? String == harness.alice.userRecordName,
                    "the owner's own participant: \(share)")
            let participants = try #require(share["participants"] as? [[String: Any]], "\(share)")
            let invited = try #require(participants.first { (($0["userIdentity"] as? [String: Any])?["lookupInfo"] as? [String: Any])?["emailAddress"] as? String == "gkumar@mac.com" }, "\(participants)")
            #expect(invited["permission"] as? String == "READ_WRITE" && invited["acceptanceStatus"] as? String == "INVITED" && invited["type"] as? String == "USER", "\(invited)")
            #expect((share["owner"] as? [String: Any])?["type"] as? String == "OWNER", "\(share)")
            // The root record now names its share.
            let root = try await call("private/records/lookup", #"{"zoneID": {"zoneName": "myCustomZone"}, "records": [{"recordName": "RecordA"}, {"recordName": "cloudkit.share.RecordA"}]}"#, as: harness.aliceToken)
            #expect((root.records.first?["share"] as? [String: Any])?["recordName"] as? String == "cloudkit.share.RecordA", "\(root.body)")
            #expect((root.records.first?["shortGUID"] as? [String: Any])?["value"] as? String == shortGUID, "a root's shortGUID is its share's: \(root.body)")
            #expect((root.records.last?["shortGUID"] as? [String: Any])?["value"] as? String == shortGUID, "\(root.body)")

            // The invitee: resolve, then accept, then read it in the shared database.
            let resolved = try await call("public/records/resolve", #"{"shortGUIDs": [{"value": "\#(shortGUID)", "shouldFetchRootRecord": false}]}"#, as: gkumarToken.string)
            let result = try #require((resolved.body["results"] as? [[String: Any]])?.first, "\(resolved.body)")
            #expect(result["participantStatus"] as? String == "INVITED" && result["rootRecordName"] as? String == "RecordA", "\(result)")
            #expect((result["shortGUID"] as? [String: Any])?["value"] as? String == shortGUID, "\(result)")
            #expect(result["rootRecord"] == nil, "shouldFetchRootRecord false: \(result)")
            let resultShare = result["share"] as? [String: Any]
            #expect(resultShare?["recordName"] as? String == "cloudkit.share.RecordA" && resultShare?["recordType"] as? String == "cloudkit.share", "\(result)")
            #expect(((resultShare?["currentUserParticipant"] as? [String: Any])?["acceptanceStatus"]) as? String == "INVITED", "\(result)")
            // With shouldFetchRootRecord, the root record, with only rootRecordDesiredKeys.
            let withRoot = try await call("public/records/resolve", #"{"shortGUIDs": [{"value": "\#(shortGUID)", "shouldFetchRootRecord": true, "rootRecordDesiredKeys": ["title"]}]}"#, as: gkumarToken.string)
            let rootRecord = ((withRoot.body["results"] as? [[String: Any]])?.first)?["rootRecord"] as? [String: Any]
            #expect(rootRecord?["recordName"] as? String == "RecordA" && rootRecord?["recordType"] as? String == "myType", "\(withRoot.body)")
            #expect(((rootRecord?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String == "A", "\(withRoot.body)")
            #expect(((rootRecord?["zoneID"] as? [String: Any])?["ownerRecordName"]) as? String == harness.alice.userRecordName, "\(withRoot.body)")
            let noKeys = try await call("public/records/resolve", #"{"shortGUIDs": [{"value": "\#(shortGUID)", "shouldFetchRootRecord": true, "rootRecordDesiredKeys": []}]}"#, as: gkumarToken.string)
            let bare = ((noKeys.body["results"] as? [[String: Any]])?.first)?["rootRecord"] as? [String: Any]
            #expect(bare?["recordName"] as? String == "RecordA" && (bare?["fields"] as? [String: Any])?.isEmpty == true, "\(noKeys.body)")
            #expect((result["ownerIdentity"] as? [String: Any])?["userRecordName"] as? String == harness.alice.userRecordName, "\(result)")
            #expect(result["containerIdentifier"] as? String == WebServicesFixture.container, "\(result)")
            let stranger = try await call("public/records/resolve", #"{"shortGUIDs": [{"value": "\#(shortGUID)", "shouldFetchRootRecord": true}]}"#, as: harness.bobToken)
            #expect(((stranger.body["results"] as? [[String: Any]])?.first)?["serverErrorCode"] as? String == "ACCESS_DENIED", "bob was not invited: \(stranger.body)")
            let accepted = try await call("public/records/accept", #"{"shortGUIDs": [{"value": "\#(shortGUID)"}]}"#, as: gkumarToken.string)
            #expect(((accepted.body["results"] as? [[String: Any]])?.first)?["participantStatus"] as? String == "ACCEPTED", "\(accepted.body)")
            let sharedZones = try await call("shared/zones/list", "{}", as: gkumarToken.string)
            #expect(sharedZones.zones.contains { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String == "myCustomZone" }, "\(sharedZones.body)")
            let read = try await call("shared/records/lookup", #"{"zoneID": {"zoneName": "myCustomZone", "ownerRecordName": "\#(harness.alice.userRecordName)"}, "records": [{"recordName": "RecordA"}]}"#, as: gkumarToken.string)
            #expect(read.records.first?["recordName"] as? String == "RecordA" && read.records.first?["serverErrorCode"] == nil, "\(read.body)")
            let write = try await call("shared/records/modify", #"{"zoneID": {"zoneName": "myCustomZone", "ownerRecordName": "\#(harness.alice.userRecordName)"}, "operations": [{"operationType": "forceUpdate", "record": {"recordName": "RecordA", "fields": {"title": {"value": "B"}}}}]}"#, as: gkumarToken.string)
            #expect(write.records.first?["serverErrorCode"] == nil, "READ_WRITE may write: \(write.body)")
            #expect(gkumar.userRecordName != harness.alice.userRecordName)

            // The owner deletes the share: the invitee's zone is gone.
            let deleted = try await call("private/records/modify", #"{"zoneID": {"zoneName": "myCustomZone"}, "operations": [{"operationType": "forceDelete", "record": {"recordName": "cloudkit.share.RecordA"}}]}"#, as: harness.aliceToken)
            #expect(deleted.records.first?["deleted"] as? Bool == true, "\(deleted.body)")
            let after = try await call("shared/records/lookup", #"{"zoneID": {"zoneName": "myCustomZone", "ownerRecordName": "\#(harness.alice.userRecordName)"}, "records": [{"recordName": "RecordA"}]}"#, as: gkumarToken.string)
            #expect(after.status == .notFound || after.records.first?["serverErrorCode"] != nil, "\(after.body)")
        }
    }

    @Test("a zone's share record: titled and public, a participant by record name with name components, a failed change leaves it as it was, a removal by REMOVED")
    func zoneShareRecord() async throws {
        let harness = try await GatewayHarness.make()
        let (carol, carolToken) = try await addUser("carol", email: "carol@example.com", on: harness.endpoint)
        // The name a sign-in provider would have given her.
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            _ = try await connection.query("UPDATE canopy.users SET display_name = 'Carol Ann Díaz' WHERE name = 'carol'", logger: TestDatabase.logger)
        }
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String, as webToken: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: webToken)
            }
            func share(_ operation: String, title: String, participants: String) -> String {
                #"{"zoneID": {"zoneName": "Trips"}, "operations": [{"operationType": "\#(operation)", "record": {"recordType": "cloudkit.share", "recordName": "cloudkit.zoneshare", "publicPermission": "READ_ONLY", "fields": {"cloudkit.title": {"value": "\#(title)"}}, "participants": [\#(participants)]}}]}"#
            }
            let carolByName = #"{"permission": "READ_WRITE", "userIdentity": {"lookupInfo": {"userRecordName": "\#(carol.userRecordName)"}}}"#
            _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Trips"}}}]}"#, as: harness.aliceToken)
            let made = try await call("private/records/modify", share("create", title: "Trips", participants: carolByName), as: harness.aliceToken)
            let record = try #require(made.records.first, "\(made.body)")
            #expect(record["recordName"] as? String == "cloudkit.zoneshare" && record["recordType"] as? String == "cloudkit.share", "\(record)")
            #expect(record["share"] == nil, "a zone's share has no root: \(record)")
            #expect(record["publicPermission"] as? String == "READ_ONLY", "\(record)")
            let title = ((record["fields"] as? [String: Any])?["cloudkit.title"] as? [String: Any])
            #expect(title?["value"] as? String == "Trips" && title?["type"] as? String == "STRING", "\(record)")
            let shortGUID = try #require((record["shortGUID"] as? [String: Any])?["value"] as? String, "\(record)")
            #expect((record["url"] as? String)?.hasSuffix("/share/" + shortGUID) == true, "\(record)")
            #expect(((record["zoneID"] as? [String: Any])?["zoneName"]) as? String == "Trips", "\(record)")
            let participants = try #require(record["participants"] as? [[String: Any]], "\(record)")
            let invited = try #require(participants.first { ($0["userIdentity"] as? [String: Any])?["userRecordName"] as? String == carol.userRecordName }, "\(participants)")
            let identity = try #require(invited["userIdentity"] as? [String: Any])
            let names = identity["nameComponents"] as? [String: Any]
            #expect(names?["givenName"] as? String == "Carol" && names?["familyName"] as? String == "Ann Díaz", "\(identity)")
            #expect((identity["lookupInfo"] as? [String: Any])?["emailAddress"] as? String == "carol@example.com", "\(identity)")
            #expect(invited["type"] as? String == "USER" && invited["permission"] as? String == "READ_WRITE" && invited["acceptanceStatus"] as? String == "INVITED", "\(invited)")

            // A change whose removal fails (nobody@ takes no part) is refused
            // as a whole: the new title is not kept either.
            let nobody = #"{"acceptanceStatus": "REMOVED", "userIdentity": {"lookupInfo": {"emailAddress": "nobody@example.com"}}}"#
            let failed = try await call("private/records/modify", share("update", title: "Renamed", participants: nobody), as: harness.aliceToken)
            #expect(failed.records.first?["serverErrorCode"] as? String != nil && failed.records.first?["recordName"] as? String == "cloudkit.zoneshare", "\(failed.body)")
            let looked = try await call("private/records/lookup", #"{"zoneID": {"zoneName": "Trips"}, "records": [{"recordName": "cloudkit.zoneshare"}]}"#, as: harness.aliceToken)
            let kept = ((looked.records.first?["fields"] as? [String: Any])?["cloudkit.title"] as? [String: Any])?["value"] as? String
            #expect(kept == "Trips", "\(looked.body)")
            #expect((looked.records.first?["shortGUID"] as? [String: Any])?["value"] as? String == shortGUID, "\(looked.body)")

            // The invitee resolves it: the metadata names the owner and carries the title.
            let resolved = try await call("shared/records/resolve", #"{"shortGUIDs": [{"value": "\#(shortGUID)"}]}"#, as: carolToken.string)
            let result = try #require((resolved.body["results"] as? [[String: Any]])?.first, "\(resolved.body)")
            #expect(result["participantType"] as? String == "USER" && result["participantPermission"] as? String == "READ_WRITE", "\(result)")
            #expect(result["databaseScope"] as? String == "SHARED" && result["rootRecordName"] == nil, "\(result)")
            #expect(((result["zoneID"] as? [String: Any])?["ownerRecordName"]) as? String == harness.alice.userRecordName, "\(result)")
            #expect(((result["share"] as? [String: Any])?["recordName"]) as? String == "cloudkit.zoneshare", "\(result)")
            #expect((result["webpageURL"] as? String)?.hasSuffix("/share/" + shortGUID) == true, "\(result)")

            // Removed with acceptanceStatus REMOVED: gone from the list, and the share no longer opens for her.
            let carolRemoved = #"{"acceptanceStatus": "REMOVED", "userIdentity": {"lookupInfo": {"userRecordName": "\#(carol.userRecordName)"}}}"#
            let removed = try await call("private/records/modify", share("update", title: "Renamed", participants: carolRemoved), as: harness.aliceToken)
            let after = try #require(removed.records.first, "\(removed.body)")
            #expect(((after["fields"] as? [String: Any])?["cloudkit.title"] as? [String: Any])?["value"] as? String == "Renamed", "\(after)")
            #expect((after["participants"] as? [[String: Any]])?.contains { ($0["userIdentity"] as? [String: Any])?["userRecordName"] as? String == carol.userRecordName } == false, "\(after)")
        }
    }

    @Test("issue 64: a share record's zone ID with another owner's ownerRecordName acts on that owner's zone (refused here), never on the caller's own zone of that name")
    func shareOfAnotherOwnersZone() async throws {
        let harness = try await GatewayHarness.make()
        let (_, carolToken) = try await addUser("carol", email: "carol@example.com", on: harness.endpoint)
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String, as webToken: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: webToken)
            }
            let zone = #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Trips"}}}]}"#
            _ = try await call("private/zones/modify", zone, as: harness.aliceToken)
            _ = try await call("private/zones/modify", zone, as: carolToken.string)
            let alice = harness.alice.userRecordName
            let made = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Trips", "ownerRecordName": "\#(alice)"}, "operations": [{"operationType": "create", "record": {"recordType": "cloudkit.share", "recordName": "cloudkit.zoneshare", "publicPermission": "READ_WRITE"}}]}"#, as: carolToken.string)
            let item = try #require(made.records.first, "\(made.body)")
            #expect(item["serverErrorCode"] != nil, "Carol made a share naming Alice's zone: \(item)")
            // Neither zone got a share.
            let own = try await call("private/records/lookup", #"{"zoneID": {"zoneName": "Trips"}, "records": [{"recordName": "cloudkit.zoneshare"}]}"#, as: carolToken.string)
            #expect(own.records.first?["serverErrorCode"] as? String == "NOT_FOUND", "Carol's own zone was shared: \(own.body)")
            let alices = try await call("private/records/lookup", #"{"zoneID": {"zoneName": "Trips"}, "records": [{"recordName": "cloudkit.zoneshare"}]}"#, as: harness.aliceToken)
            #expect(alices.records.first?["serverErrorCode"] as? String == "NOT_FOUND", "\(alices.body)")
            // Naming oneself is one's own zone.
            let mine = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Trips", "ownerRecordName": "\#(alice)"}, "operations": [{"operationType": "create", "record": {"recordType": "cloudkit.share", "recordName": "cloudkit.zoneshare", "publicPermission": "READ_ONLY"}}]}"#, as: harness.aliceToken)
            #expect(mine.records.first?["recordType"] as? String == "cloudkit.share", "\(mine.body)")
        }
    }

    @Test("assets/upload in two steps: upload URLs, the bytes posted, the receipt saved in a record, the download URL read back")
    func assetUpload() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-ws-assets-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = WebServicesFixture.configuration()
        configuration.assets = AssetSettings(store: try await FileAssetStore(directory: directory))
        try await harness.test(configuration: configuration, live: true) { client in
            // Step 1: the reference's request.
            let asked = try await client.webServices("private/assets/upload", #"{"tokens":[{"recordType":"Artwork","fieldName":"image"}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            let upload = try #require((asked.body["tokens"] as? [[String: Any]])?.first, "\(asked.body)")
            let recordName = try #require(upload["recordName"] as? String)
            #expect(upload["fieldName"] as? String == "image")
            let url = try #require((upload["url"] as? String).flatMap(URL.init(string:)), "\(upload)")
            let uri = url.path + "?" + (url.query ?? "")
            // Step 2: the bytes, with no credential but the URL's signature.
            let bytes = ByteBuffer(bytes: Array("a picture of MacKerricher State Park".utf8))
            let posted = try await client.execute(uri: uri, method: .post, headers: [.contentType: "image/png"], body: bytes)
            #expect(posted.status == .ok, "\(String(buffer: posted.body))")
            let singleFile = try #require((try JSONSerialization.jsonObject(with: Data(buffer: posted.body)) as? [String: Any])?["singleFile"] as? [String: Any])
            #expect(singleFile["size"] as? Int == bytes.readableBytes && (singleFile["receipt"] as? String)?.hasPrefix("upl_") == true, "\(singleFile)")
            let tampered = try await client.execute(uri: uri.replacingOccurrences(of: "signature=", with: "signature=00"), method: .post, headers: [:], body: bytes)
            #expect(tampered.status == .forbidden, "\(String(buffer: tampered.body))")
            // Step 3: the record saved with the receipt, as the reference's example does.
            let singleFileJSON = String(decoding: try JSONSerialization.data(withJSONObject: singleFile), as: UTF8.self)
            let saved = try await client.webServices("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Artist", "fields": {"title": {"value": "MacKerricher State Park"}, "artist": {"value": "Mei Chen"}, "image": {"value": \#(singleFileJSON)}}, "recordName": "\#(recordName)"}}], "desiredKeys": []}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(saved.records.first?["recordName"] as? String == recordName && saved.records.first?["recordChangeTag"] is String, "\(saved.body)")
            let read = try await client.webServices("private/records/lookup", #"{"records": [{"recordName": "\#(recordName)"}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            let image = try #require(((read.records.first?["fields"] as? [String: Any])?["image"] as? [String: Any]), "\(read.body)")
            #expect(image["type"] as? String == "ASSETID", "\(image)")
            let value = try #require(image["value"] as? [String: Any])
            #expect(value["fileChecksum"] as? String == singleFile["fileChecksum"] as? String && value["size"] as? Int == bytes.readableBytes, "\(value)")
            let download = try #require((value["downloadURL"] as? String).flatMap(URL.init(string:)), "\(value)")
            let fetched = try await client.execute(uri: download.path + "?" + (download.query ?? ""), method: .get, headers: [:], body: nil)
            #expect(fetched.status == .ok && String(buffer: fetched.body) == "a picture of MacKerricher State Park")
        }
    }
}
