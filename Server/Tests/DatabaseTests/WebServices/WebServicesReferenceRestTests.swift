@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 66: the rest of Apple's reference, and what CloudKit JS sends,
/// each over live HTTP with the request the reference (or CloudKit JS's
/// published behaviour) describes and the answer it says a client gets.
@Suite("Web Services: the rest of the reference", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesReferenceRestTests {
    static func reference(_ name: String, action: String) -> String {
        #"{"type": "REFERENCE", "value": {"recordName": "\#(name)", "action": "\#(action)"}}"#
    }

    @Test("a VALIDATE reference to a record that does not exist fails the save with VALIDATING_REFERENCE_ERROR (412 for a whole request); to one that exists, or is saved earlier in the batch, it is saved and kept as NONE; GraphQL refuses it as REFERENCE_VIOLATION")
    func validatingReferences() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func modify(_ body: String) async throws -> WebServicesAnswer {
                try await client.webServices("private/records/modify", body, apiToken: token, webAuthToken: harness.aliceToken)
            }
            _ = try await modify(#"{"operations": [{"operationType": "create", "record": {"recordType": "Artist", "recordName": "monet", "fields": {}}}]}"#)

            // The target is missing: that record fails, the other is saved.
            let missing = try await modify(#"""
                {"atomic": false, "operations": [
                  {"operationType": "create", "record": {"recordType": "Painting", "recordName": "lost", "fields": {"artist": \#(Self.reference("nobody", action: "VALIDATE"))}}},
                  {"operationType": "create", "record": {"recordType": "Painting", "recordName": "water-lilies", "fields": {"artist": \#(Self.reference("monet", action: "VALIDATE"))}}}
                ]}
                """#)
            #expect(missing.status == .ok, "\(missing.body)")
            let lost = try #require(missing.records.first, "\(missing.body)")
            #expect(lost["serverErrorCode"] as? String == "VALIDATING_REFERENCE_ERROR" && lost["recordName"] as? String == "lost", "\(lost)")
            #expect((lost["reason"] as? String)?.contains("nobody") == true, "the reason names the missing target: \(lost)")
            let saved = try #require(missing.records.last, "\(missing.body)")
            #expect(saved["serverErrorCode"] == nil, "\(saved)")
            let savedArtist = ((saved["fields"] as? [String: Any])?["artist"] as? [String: Any])?["value"] as? [String: Any]
            #expect(savedArtist?["recordName"] as? String == "monet" && savedArtist?["action"] as? String == "NONE", "kept as NONE: \(saved)")

            // Nothing of the failed record was written.
            let lookup = try await client.webServices("private/records/lookup", #"{"records": [{"recordName": "lost"}, {"recordName": "water-lilies"}]}"#,
                                                      apiToken: token, webAuthToken: harness.aliceToken)
            #expect(lookup.records.first?["serverErrorCode"] as? String == "NOT_FOUND", "\(lookup.body)")
            #expect(lookup.records.last?["recordName"] as? String == "water-lilies", "\(lookup.body)")

            // Saved earlier in the same batch, and in a list.
            let sameBatch = try await modify(#"""
                {"operations": [
                  {"operationType": "create", "record": {"recordType": "Artist", "recordName": "morisot", "fields": {}}},
                  {"operationType": "create", "record": {"recordType": "Painting", "recordName": "cradle", "fields": {
                     "artists": {"type": "REFERENCE_LIST", "value": [{"recordName": "morisot", "action": "VALIDATE"}, {"recordName": "monet", "action": "DELETE_SELF"}]}}}}
                ]}
                """#)
            #expect(sameBatch.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(sameBatch.body)")
            let listed = ((sameBatch.records.last?["fields"] as? [String: Any])?["artists"] as? [String: Any])?["value"] as? [[String: Any]]
            #expect(listed?.compactMap { $0["action"] as? String } == ["NONE", "DELETE_SELF"], "\(sameBatch.body)")
            let missingInList = try await modify(#"""
                {"operations": [{"operationType": "create", "record": {"recordType": "Painting", "recordName": "pair", "fields": {
                   "artists": {"type": "REFERENCE_LIST", "value": [{"recordName": "monet", "action": "VALIDATE"}, {"recordName": "ghost", "action": "VALIDATE"}]}}}}]}
                """#)
            #expect(missingInList.records.first?["serverErrorCode"] as? String == "VALIDATING_REFERENCE_ERROR", "\(missingInList.body)")

            // An empty list beside a VALIDATE reference stays an empty list.
            let withEmptyList = try await modify(#"""
                {"operations": [{"operationType": "create", "record": {"recordType": "Painting", "recordName": "bare", "fields": {
                   "tags": {"type": "STRING_LIST", "value": []}, "artist": \#(Self.reference("monet", action: "VALIDATE"))}}}]}
                """#)
            let bare = withEmptyList.records.first?["fields"] as? [String: Any]
            #expect(withEmptyList.records.first?["serverErrorCode"] == nil && (bare?["tags"] as? [String: Any])?["value"] as? [Any] != nil, "\(withEmptyList.body)")

            // An atomic batch: the failed record says why, the others ATOMIC_ERROR.
            let gallery = try await client.webServices("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Gallery"}}}]}"#,
                                                       apiToken: token, webAuthToken: harness.aliceToken)
            #expect(gallery.status == .ok, "\(gallery.body)")
            let atomic = try await modify(#"""
                {"zoneID": {"zoneName": "Gallery"}, "atomic": true, "operations": [
                  {"operationType": "create", "record": {"recordType": "Painting", "recordName": "a", "fields": {}}},
                  {"operationType": "create", "record": {"recordType": "Painting", "recordName": "b", "fields": {"artist": \#(Self.reference("nobody", action: "VALIDATE"))}}}
                ]}
                """#)
            let codes = atomic.records.compactMap { $0["serverErrorCode"] as? String }
            #expect(codes.contains("VALIDATING_REFERENCE_ERROR") && codes.contains("ATOMIC_ERROR"), "\(atomic.status) \(atomic.body)")

            // GraphQL: the same reference, refused by the same check.
            let graphQL = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: $s, atomic: false) { saved { recordName fields } errors { recordName code message } } }
                """, ["s": [
                    ["recordName": "gq-lost", "recordType": "Painting", "fields": ["artist": ["type": "REFERENCE", "recordName": "nobody", "action": "VALIDATE"]]],
                    ["recordName": "gq-kept", "recordType": "Painting", "fields": ["artist": ["type": "REFERENCE", "recordName": "monet", "action": "VALIDATE"]]],
                ]], token: harness.aliceToken)
            let errors = answerList(graphQL.object["errors"])
            #expect(errors.count == 1 && errors.first?["code"] as? String == "REFERENCE_VIOLATION" && errors.first?["recordName"] as? String == "gq-lost", "\(graphQL.body)")
            let kept = answerList(graphQL.object["saved"]).first?["fields"] as? [String: Any]
            #expect((kept?["artist"] as? [String: Any])?["action"] as? String == "NONE", "\(graphQL.body)")
        }
    }

    @Test("a VALIDATE reference to a record the writer cannot see is answered as one to a record that does not exist: no way to learn what exists past row-level security")
    func validatingHiddenReferences() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String, as webToken: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: webToken)
            }
            _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Studio"}}}]}"#, as: harness.aliceToken)
            _ = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Studio"}, "operations": [{"operationType": "create", "record": {"recordType": "Sketch", "recordName": "secret", "fields": {}}}, {"operationType": "create", "record": {"recordType": "Sketch", "recordName": "root", "fields": {}}}]}"#, as: harness.aliceToken)
            let shared = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Studio"}, "operations": [{"operationType": "create", "record": {"recordType": "cloudkit.share", "forRecord": {"recordName": "root"}, "publicPermission": "READ_WRITE"}}]}"#, as: harness.aliceToken)
            let guid = try #require((shared.records.first?["shortGUID"] as? [String: Any])?["value"] as? String, "\(shared.body)")
            _ = try await call("shared/records/accept", #"{"shortGUIDs": [{"value": "\#(guid)"}]}"#, as: harness.bobToken)
            let zone = #"{"zoneName": "Studio", "ownerRecordName": "\#(harness.alice.userRecordName)"}"#
            func child(_ name: String, _ target: String) -> String {
                #"{"operationType": "create", "record": {"recordType": "Sketch", "recordName": "\#(name)", "parent": {"recordName": "root"}, "fields": {"about": \#(Self.reference(target, action: "VALIDATE"))}}}"#
            }
            let answers = try await call("shared/records/modify", #"{"zoneID": \#(zone), "atomic": false, "operations": [\#(child("c1", "secret")), \#(child("c2", "nothing")), \#(child("c3", "root"))]}"#, as: harness.bobToken)
            #expect(answers.status == .ok && answers.records.count == 3, "\(answers.body)")
            let codes = answers.records.map { $0["serverErrorCode"] as? String ?? "saved" }
            #expect(codes == ["VALIDATING_REFERENCE_ERROR", "VALIDATING_REFERENCE_ERROR", "saved"], "a hidden record and a missing one look alike: \(answers.body)")
        }
    }

    @Test("desiredKeys on one record of records/lookup, and on one operation of records/modify, replace the request's for that record alone")
    func desiredKeysPerRecord() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: harness.aliceToken)
            }
            func keys(_ record: [String: Any]?) -> [String] { ((record?["fields"] as? [String: Any]) ?? [:]).keys.sorted() }
            let fields = #"{"title": {"value": "t"}, "year": {"value": 1872}, "notes": {"value": "n"}}"#
            let saved = try await call("private/records/modify", #"""
                {"desiredKeys": ["title"], "operations": [
                  {"operationType": "create", "record": {"recordType": "Painting", "recordName": "p1", "fields": \#(fields)}},
                  {"operationType": "create", "desiredKeys": ["year", "notes"], "record": {"recordType": "Painting", "recordName": "p2", "fields": \#(fields)}},
                  {"operationType": "create", "desiredKeys": null, "record": {"recordType": "Painting", "recordName": "p3", "fields": \#(fields)}}
                ]}
                """#)
            #expect(saved.status == .ok && saved.records.count == 3, "\(saved.body)")
            #expect(keys(saved.records.first) == ["title"], "the request's keys: \(saved.body)")
            #expect(keys(saved.records.dropFirst().first) == ["notes", "year"], "the operation's keys: \(saved.body)")
            #expect(keys(saved.records.last) == ["notes", "title", "year"], "null: every field: \(saved.body)")

            let lookup = try await call("private/records/lookup", #"""
                {"desiredKeys": ["year"], "records": [{"recordName": "p1"}, {"recordName": "p2", "desiredKeys": ["title"]}, {"recordName": "missing", "desiredKeys": ["title"]}, {"recordName": "p3", "desiredKeys": []}]}
                """#)
            #expect(lookup.status == .ok && lookup.records.count == 4, "\(lookup.body)")
            #expect(keys(lookup.records.first) == ["year"], "\(lookup.body)")
            #expect(keys(lookup.records[1]) == ["title"], "\(lookup.body)")
            #expect(lookup.records[2]["serverErrorCode"] as? String == "NOT_FOUND", "\(lookup.body)")
            #expect(keys(lookup.records.last).isEmpty && lookup.records.last?["recordName"] as? String == "p3", "an empty list: no fields: \(lookup.body)")

            let bad = try await call("private/records/lookup", #"{"records": [{"recordName": "p1", "desiredKeys": "title"}]}"#)
            #expect(bad.status == .badRequest && (bad.body["reason"] as? String)?.contains("records[0].desiredKeys") == true, "\(bad.body)")
            let badOperation = try await call("private/records/modify", #"{"operations": [{"operationType": "forceUpdate", "desiredKeys": [1], "record": {"recordType": "Painting", "recordName": "p1", "fields": {}}}]}"#)
            #expect(badOperation.status == .badRequest && (badOperation.body["reason"] as? String)?.contains("operations[0].desiredKeys") == true, "\(badOperation.body)")
        }
    }

    @Test("a share saved as cloudKit.share (the reference's spelling in places) is a share, answered as CloudKit spells it, cloudkit.share")
    func shareTypeSpellings() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: harness.aliceToken)
            }
            _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Album"}}}]}"#)
            let made = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Album"}, "operations": [{"operationType": "create", "record": {"recordType": "cloudKit.share", "publicPermission": "READ_ONLY"}}]}"#)
            let share = try #require(made.records.first, "\(made.body)")
            #expect(share["recordType"] as? String == "cloudkit.share" && share["recordName"] as? String == "cloudkit.zoneshare", "\(made.body)")
            #expect((share["shortGUID"] as? [String: Any])?["value"] is String && share["publicPermission"] as? String == "READ_ONLY", "\(made.body)")
        }
    }

    @Test("zoneWide: true queries every zone of the database at once: each record with its own zoneID, names repeated across zones each once, paged by continuationMarker; with a zoneID it is that zone; the shared database's zones are those shared with the caller")
    func zoneWideQueries() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String, as webToken: String? = nil) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: webToken ?? harness.aliceToken)
            }
            for zoneName in ["Home", "Work"] {
                _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "\#(zoneName)"}}}]}"#)
            }
            func note(_ name: String, _ rank: Int) -> String {
                #"{"operationType": "create", "record": {"recordType": "Note", "recordName": "\#(name)", "fields": {"rank": {"value": \#(rank)}}}}"#
            }
            _ = try await call("private/records/modify", #"{"operations": [\#(note("same", 1)), \#(note("d1", 5))]}"#)
            _ = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Home"}, "operations": [\#(note("same", 1)), \#(note("h1", 3))]}"#)
            _ = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Work"}, "operations": [\#(note("same", 1)), \#(note("w1", 2))]}"#)
            // Bob's zone, not shared: never in alice's answers.
            _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Bobs"}}}]}"#, as: harness.bobToken)
            _ = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Bobs"}, "operations": [\#(note("b1", 4))]}"#, as: harness.bobToken)

            var seen: [(String, String)] = []
            var marker: String?
            var pages = 0
            repeat {
                var body = #"{"zoneWide": true, "query": {"recordType": "Note", "sortBy": [{"fieldName": "rank"}]}, "resultsLimit": 2"#
                if let marker { body += #", "continuationMarker": "\#(marker)""# }
                let page = try await call("private/records/query", body + "}")
                #expect(page.status == .ok, "\(page.body)")
                for record in page.records {
                    let zone = (record["zoneID"] as? [String: Any])?["zoneName"] as? String ?? "?"
                    #expect((record["zoneID"] as? [String: Any])?["ownerRecordName"] as? String == harness.alice.userRecordName, "\(record)")
                    seen.append((zone, record["recordName"] as? String ?? "?"))
                }
                marker = page.body["continuationMarker"] as? String
                pages += 1
            } while marker != nil && pages < 10
            #expect(seen.count == 6 && pages == 3, "\(seen) in \(pages) pages")
            #expect(Set(seen.map { "\($0.0)/\($0.1)" }) == ["_defaultZone/same", "Home/same", "Work/same", "Work/w1", "Home/h1", "_defaultZone/d1"], "\(seen)")
            #expect(seen.suffix(3).map(\.1) == ["w1", "h1", "d1"], "ranked across zones: \(seen)")

            let oneZone = try await call("private/records/query", #"{"zoneWide": true, "zoneID": {"zoneName": "Home"}, "query": {"recordType": "Note"}}"#)
            #expect(oneZone.records.compactMap { $0["recordName"] as? String }.sorted() == ["h1", "same"], "a zoneID wins: \(oneZone.body)")
            let badFlag = try await call("private/records/query", #"{"zoneWide": "yes", "query": {"recordType": "Note"}}"#)
            #expect(badFlag.status == .badRequest, "\(badFlag.body)")

            // Bob shares his zone with alice; her shared database is zone-wide over it.
            let shared = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Bobs"}, "operations": [{"operationType": "create", "record": {"recordType": "cloudkit.share", "publicPermission": "READ_ONLY"}}]}"#, as: harness.bobToken)
            let guid = try #require((shared.records.first?["shortGUID"] as? [String: Any])?["value"] as? String, "\(shared.body)")
            _ = try await call("shared/records/accept", #"{"shortGUIDs": [{"value": "\#(guid)"}]}"#)
            let sharedWide = try await call("shared/records/query", #"{"zoneWide": true, "query": {"recordType": "Note"}}"#)
            #expect(sharedWide.records.compactMap { $0["recordName"] as? String } == ["b1"], "\(sharedWide.body)")
            #expect((sharedWide.records.first?["zoneID"] as? [String: Any])?["ownerRecordName"] as? String == harness.bob.userRecordName, "\(sharedWide.body)")
            let bobsOwn = try await call("private/records/query", #"{"zoneWide": true, "query": {"recordType": "Note"}}"#, as: harness.bobToken)
            #expect(bobsOwn.records.compactMap { $0["recordName"] as? String } == ["b1"], "bob's private database: his zones only: \(bobsOwn.body)")
        }
    }

    @Test("signed out, CloudKit JS's ckWebAuthToken=null (or empty, or undefined) reads the public database as no parameter does; the private database still answers 421")
    func signedOutPublicReads() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let made = try await client.webServices("public/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Notice", "recordName": "hello", "fields": {"text": {"value": "open to all"}}}}]}"#,
                                                    apiToken: token, webAuthToken: harness.aliceToken)
            #expect(made.status == .ok && made.records.first?["serverErrorCode"] == nil, "\(made.body)")
            let query = #"{"query": {"recordType": "Notice"}, "zoneID": {"zoneName": "_defaultZone"}}"#
            let without = try await client.webServices("public/records/query", query, apiToken: token)
            #expect(without.status == .ok && without.records.count == 1, "\(without.body)")
            for spelling in ["null", "", "undefined"] {
                let signedOut = try await client.webServices("public/records/query", query, apiToken: token, webAuthToken: spelling)
                #expect(signedOut.status == .ok && signedOut.records.map { $0["recordName"] as? String } == ["hello"], "ckWebAuthToken=\(spelling): \(signedOut.status) \(signedOut.body)")
            }
            let privateRead = try await client.webServices("private/records/query", query, apiToken: token, webAuthToken: "null")
            #expect(privateRead.status.code == 421 && privateRead.code == "AUTHENTICATION_REQUIRED" && privateRead.body["redirectURL"] is String, "\(privateRead.body)")
            // A token that is not one of those spellings is still checked.
            let forged = try await client.webServices("public/records/query", query, apiToken: token, webAuthToken: "nul")
            #expect(forged.status.code == 421, "\(forged.status) \(forged.body)")
        }
    }

    @Test("users/lookup/id answers each person the caller may see (names, never a contact; a stranger is NOT_FOUND); users/lookup/contacts answers an empty list")
    func usersByRecordName() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        // The name a sign-in provider gave her; her account's handle is an address.
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            _ = try await connection.query("UPDATE canopy.users SET display_name = 'Alice Liddell' WHERE name = 'alice'", logger: TestDatabase.logger)
        }
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let lookUpAlice = #"{"users": [{"userRecordName": "\#(harness.alice.userRecordName)"}, {"userRecordName": "_nobody"}]}"#
            // Bob shares nothing with alice: her record name (on any public record) tells him nothing.
            let stranger = try await client.webServices("public/users/lookup/id", lookUpAlice, apiToken: token, webAuthToken: harness.bobToken)
            #expect(((stranger.body["users"] as? [[String: Any]])?.first?["serverErrorCode"]) as? String == "NOT_FOUND", "\(stranger.body)")
            #expect(!"\(stranger.body)".contains("Alice"), "\(stranger.body)")
            // Alice shares a zone with bob: now she is someone he may see.
            _ = try await client.webServices("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Tea"}}}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            let shared = try await client.webServices("private/records/modify", #"{"zoneID": {"zoneName": "Tea"}, "operations": [{"operationType": "create", "record": {"recordType": "cloudkit.share", "publicPermission": "READ_ONLY"}}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            let guid = try #require((shared.records.first?["shortGUID"] as? [String: Any])?["value"] as? String, "\(shared.body)")
            _ = try await client.webServices("shared/records/accept", #"{"shortGUIDs": [{"value": "\#(guid)"}]}"#, apiToken: token, webAuthToken: harness.bobToken)
            let byID = try await client.webServices("public/users/lookup/id", lookUpAlice, apiToken: token, webAuthToken: harness.bobToken)
            #expect(byID.status == .ok, "\(byID.body)")
            let users = byID.body["users"] as? [[String: Any]] ?? []
            #expect(users.count == 2, "\(byID.body)")
            #expect(users.first?["userRecordName"] as? String == harness.alice.userRecordName, "\(byID.body)")
            let names = users.first?["nameComponents"] as? [String: Any]
            #expect(names?["givenName"] as? String == "Alice" && names?["familyName"] as? String == "Liddell", "\(byID.body)")
            let lookupInfo = users.first?["lookupInfo"] as? [String: Any] ?? [:]
            #expect(lookupInfo["emailAddress"] == nil && lookupInfo["phoneNumber"] == nil, "no contact of alice's: \(byID.body)")
            #expect(!"\(byID.body)".contains("alice@example.com"), "\(byID.body)")
            #expect(users.last?["serverErrorCode"] as? String == "NOT_FOUND" && users.last?["userRecordName"] as? String == "_nobody", "\(byID.body)")
            let empty = try await client.webServices("public/users/lookup/id", #"{"users": []}"#, apiToken: token, webAuthToken: harness.bobToken)
            #expect(empty.status == .badRequest && (empty.body["reason"] as? String)?.contains("userRecordName") == true, "\(empty.body)")
            let anonymous = try await client.webServices("public/users/lookup/id", #"{"users": [{"userRecordName": "\#(harness.alice.userRecordName)"}]}"#, apiToken: token)
            #expect(anonymous.status.code == 421, "signed out, nobody is looked up: \(anonymous.body)")

            let contacts = try await client.webServices("public/users/lookup/contacts", "{}", apiToken: token, webAuthToken: harness.bobToken)
            #expect(contacts.status == .ok && (contacts.body["users"] as? [Any])?.isEmpty == true, "\(contacts.status) \(contacts.body)")
            let contactsByGet = try await client.webServices("public/users/lookup/contacts", apiToken: token, webAuthToken: harness.bobToken, method: .get)
            #expect(contactsByGet.status == .ok && (contactsByGet.body["users"] as? [Any])?.isEmpty == true, "\(contactsByGet.body)")
        }
    }

    @Test("resultsLimit above the reference's maximum of 200 answers 200 records and a continuationMarker that pages to the rest; below 1 is refused")
    func resultsLimitMaximum() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let operations = (0..<250).map { index in
                #"{"operationType": "create", "record": {"recordType": "Line", "recordName": "line-\#(index)", "fields": {"n": {"value": \#(index)}}}}"#
            }.joined(separator: ",")
            let made = try await client.webServices("private/records/modify", #"{"operations": [\#(operations)]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(made.status == .ok && made.records.count == 250, "\(made.status)")
            var names: Set<String> = []
            var marker: String?
            var pages: [Int] = []
            repeat {
                var body = #"{"query": {"recordType": "Line", "sortBy": [{"fieldName": "n"}]}, "resultsLimit": 500"#
                if let marker { body += #", "continuationMarker": "\#(marker)""# }
                body += "}"
                let page = try await client.webServices("private/records/query", body, apiToken: token, webAuthToken: harness.aliceToken)
                #expect(page.status == .ok, "\(page.body)")
                pages.append(page.records.count)
                names.formUnion(page.records.compactMap { $0["recordName"] as? String })
                marker = page.body["continuationMarker"] as? String
            } while marker != nil && pages.count < 5
            #expect(pages == [200, 50], "\(pages)")
            #expect(names.count == 250)
            let zero = try await client.webServices("private/records/query", #"{"query": {"recordType": "Line"}, "resultsLimit": 0}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(zero.status == .badRequest && zero.code == "BAD_REQUEST", "\(zero.body)")
            // The feeds page the same way.
            let changes = try await client.webServices("private/records/changes", #"{"zoneID": {"zoneName": "_defaultZone"}, "resultsLimit": 1000}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(changes.status == .ok && changes.records.count == 200 && changes.body["moreComing"] as? Bool == true, "\(changes.status) \(changes.records.count)")
        }
    }

    @Test("a subscription's notificationInfo is answered back by subscriptions/modify, lookup and list as it was saved; an unknown key or a wrong type is refused naming it")
    func notificationInfo() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: harness.aliceToken)
            }
            let info = #"{"alertBody": "A new painting", "soundName": "default", "shouldBadge": true, "shouldSendContentAvailable": true, "alertLocalizationArgs": ["title"]}"#
            let saved = try await call("private/subscriptions/modify", #"""
                {"operations": [{"operationType": "create", "subscription": {"subscriptionID": "paintings", "subscriptionType": "query",
                  "query": {"recordType": "Painting"}, "firesOn": ["create"], "notificationInfo": \#(info)}}]}
                """#)
            let expected = try JSONSerialization.jsonObject(with: Data(info.utf8)) as? NSDictionary
            let answered = (saved.body["subscriptions"] as? [[String: Any]])?.first
            #expect((answered?["notificationInfo"] as? NSDictionary) == expected, "\(saved.body)")
            let lookup = try await call("private/subscriptions/lookup", #"{"subscriptions": [{"subscriptionID": "paintings"}]}"#)
            #expect(((lookup.body["subscriptions"] as? [[String: Any]])?.first?["notificationInfo"] as? NSDictionary) == expected, "\(lookup.body)")
            let list = try await client.webServices("private/subscriptions/list", apiToken: token, webAuthToken: harness.aliceToken, method: .get)
            #expect(((list.body["subscriptions"] as? [[String: Any]])?.first?["notificationInfo"] as? NSDictionary) == expected, "\(list.body)")

            // Saved again without it: none.
            let again = try await call("private/subscriptions/modify", #"{"operations": [{"operationType": "update", "subscription": {"subscriptionID": "paintings", "subscriptionType": "query", "query": {"recordType": "Painting"}}}]}"#)
            #expect((again.body["subscriptions"] as? [[String: Any]])?.first?["notificationInfo"] == nil, "\(again.body)")

            let unknown = try await call("private/subscriptions/modify", #"{"operations": [{"operationType": "create", "subscription": {"subscriptionID": "z", "subscriptionType": "zone", "zoneID": {"zoneName": "_defaultZone"}, "notificationInfo": {"alertBody": "x", "loudness": 11}}}]}"#)
            let refused = (unknown.body["subscriptions"] as? [[String: Any]])?.first
            #expect(refused?["serverErrorCode"] as? String == "BAD_REQUEST" && (refused?["reason"] as? String)?.contains("loudness") == true, "\(unknown.body)")
            let wrongType = try await call("private/subscriptions/modify", #"{"operations": [{"operationType": "create", "subscription": {"subscriptionID": "z", "subscriptionType": "zone", "zoneID": {"zoneName": "_defaultZone"}, "notificationInfo": {"shouldBadge": "yes"}}}]}"#)
            let wrong = (wrongType.body["subscriptions"] as? [[String: Any]])?.first
            #expect(wrong?["serverErrorCode"] as? String == "BAD_REQUEST" && (wrong?["reason"] as? String)?.contains("shouldBadge") == true, "\(wrongType.body)")
        }
    }
}

/// A GraphQL list of objects, or none.
private func answerList(_ value: Any?) -> [[String: Any]] { value as? [[String: Any]] ?? [] }
