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

/// CloudKit Web Services over real HTTP through the real stack, with the
/// request bodies of Apple's "CloudKit Web Services Reference" (written from
/// the reference, not from Canopy's answers; docs/WEB_SERVICES.md).
@Suite("Web Services: the reference's requests", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesReferenceTests {
    @Test("the container, the environment and the API token are checked before anything runs")
    func credentials() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        let other = try await WebServicesFixture.apiToken(on: harness.endpoint, container: "iCloud.com.example.other")
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let wrongContainer = try await client.webServices("private/zones/list", apiToken: token, webAuthToken: harness.aliceToken, container: "iCloud.com.example.nope")
            #expect(wrongContainer.status == .notFound && wrongContainer.code == "NOT_FOUND", "\(wrongContainer.body)")
            let wrongEnvironment = try await client.webServices("private/zones/list", apiToken: token, webAuthToken: harness.aliceToken, environment: "development")
            #expect(wrongEnvironment.status == .notFound && wrongEnvironment.code == "NOT_FOUND", "\(wrongEnvironment.body)")
            let none = try await client.webServices("private/zones/list", apiToken: nil, webAuthToken: harness.aliceToken)
            #expect(none.status == .unauthorized && none.code == "AUTHENTICATION_FAILED", "\(none.body)")
            #expect((none.body["uuid"] as? String)?.isEmpty == false && (none.body["reason"] as? String)?.contains("ckAPIToken") == true)
            let otherContainers = try await client.webServices("private/zones/list", apiToken: other, webAuthToken: harness.aliceToken)
            #expect(otherContainers.status == .unauthorized && otherContainers.code == "AUTHENTICATION_FAILED", "\(otherContainers.body)")
            let forged = try await client.webServices("private/zones/list", apiToken: String(token.dropLast(2)) + "AA", webAuthToken: harness.aliceToken)
            #expect(forged.status == .unauthorized, "\(forged.body)")
            let good = try await client.webServices("private/zones/list", apiToken: token, webAuthToken: harness.aliceToken, method: .get)
            #expect(good.status == .ok, "\(good.body)")
            #expect(good.zones.contains { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String == "_defaultZone" }, "\(good.body)")
            let unknown = try await client.webServices("private/records/frobnicate", "{}", apiToken: token, webAuthToken: harness.aliceToken)
            #expect(unknown.status == .notFound && unknown.code == "NOT_FOUND", "\(unknown.body)")
            // A route's prefix is an unknown operation too, in the reference's shape.
            for prefix in ["private/records", "tokens", "private/users/lookup"] {
                let partial = try await client.webServices(prefix, "{}", apiToken: token, webAuthToken: harness.aliceToken)
                #expect(partial.status == .notFound && partial.code == "NOT_FOUND", "\(prefix): \(partial.status) \(partial.body)")
            }
        }
    }

    @Test("--access-log writes the path of every request but never the value of ckAPIToken, ckWebAuthToken or a URL's signature")
    func accessLogRedacts() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        var configuration = WebServicesFixture.configuration()
        configuration.accessLog = true
        try await harness.test(configuration: configuration, live: true) { client in
            let answer = try await client.webServices("private/zones/list", apiToken: token, webAuthToken: harness.aliceToken, method: .get)
            #expect(answer.status == .ok)
            _ = try await client.execute(uri: "/assets/\(String(repeating: "0", count: 64))?type=image/png&expires=1&signature=deadbeef", method: .get, headers: [:], body: nil)
            // A web courier's URL is its credential, in its path.
            let courier = try await client.webServices("courier/\(String(repeating: "c", count: 64))", apiToken: nil, method: .get)
            #expect(courier.status == .notFound && courier.code == "NOT_FOUND", "\(courier.body)")
        }
        let logs = harness.logs.text
        #expect(logs.contains("private/zones/list?ckAPIToken=***&ckWebAuthToken=***"), "\(logs.suffix(2000))")
        #expect(logs.contains("signature=***") && !logs.contains("deadbeef"))
        #expect(logs.contains("/courier/***") && !logs.contains(String(repeating: "c", count: 64)), "\(logs.suffix(2000))")
        #expect(!logs.contains(token) && !logs.contains(harness.aliceToken), "no credential in the log")
    }

    @Test("users/current without a web token is AUTHENTICATION_REQUIRED with a redirectURL, and with one names the user")
    func currentUser() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        var configuration = WebServicesFixture.configuration()
        configuration.publicURL = "https://canopy.example.com"
        try await harness.test(configuration: configuration, live: true) { client in
            // The reference's example: curl ".../[database]/users/current?ckAPIToken=[API token]"
            let anonymous = try await client.webServices("public/users/current", apiToken: token, method: .get)
            #expect(anonymous.status.code == 421 && anonymous.code == "AUTHENTICATION_REQUIRED", "\(anonymous.body)")
            let redirect = try #require(anonymous.body["redirectURL"] as? String)
            #expect(redirect.hasPrefix("https://canopy.example.com/#/web-services/sign-in?container=\(WebServicesFixture.container)&environment=production&ckAPIToken=\(token.prefix(16))"), "\(redirect)")
            #expect(!redirect.contains(token.dropFirst(16)), "the redirect never carries the API token's secret")
            let badWebToken = try await client.webServices("public/users/current", apiToken: token, webAuthToken: "cnp_0123456789abcdef_nope", method: .get)
            #expect(badWebToken.status.code == 421 && badWebToken.code == "AUTHENTICATION_REQUIRED", "\(badWebToken.body)")
            let current = try await client.webServices("public/users/current", apiToken: token, webAuthToken: harness.aliceToken, method: .get)
            #expect(current.status == .ok, "\(current.body)")
            #expect(current.body["userRecordName"] as? String == harness.alice.userRecordName && current.body["firstName"] as? String == "alice", "\(current.body)")
            let caller = try await client.webServices("public/users/caller", apiToken: token, webAuthToken: harness.aliceToken, method: .get)
            let identity = try #require((caller.body["users"] as? [[String: Any]])?.first, "\(caller.body)")
            #expect(identity["userRecordName"] as? String == harness.alice.userRecordName)
            #expect((identity["lookupInfo"] as? [String: Any])?["emailAddress"] as? String == "alice@example.com", "\(identity)")
        }
    }

    @Test("records/modify: create, update, forceUpdate, replace, forceReplace, delete and forceDelete with their tags")
    func modify() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func modify(_ body: String) async throws -> WebServicesAnswer {
                try await client.webServices("private/records/modify", body, apiToken: token, webAuthToken: harness.aliceToken)
            }
            // The reference's create example, in an operations list.
            let created = try await modify("""
                {"operations": [{
                  "operationType" : "create",
                  "record" : {
                    "recordType" : "Artist",
                    "fields" : {
                      "firstName" : {"value" : "Mei"},
                      "lastName" : {"value" : "Chen"}
                    },
                    "recordName" : "Mei Chen"
                  }
                }]}
                """)
            #expect(created.status == .ok, "\(created.body)")
            let mei = try #require(created.records.first, "\(created.body)")
            #expect(mei["recordName"] as? String == "Mei Chen" && mei["recordType"] as? String == "Artist")
            let fields = try #require(mei["fields"] as? [String: [String: Any]], "\(mei)")
            #expect(fields["firstName"]?["value"] as? String == "Mei" && fields["firstName"]?["type"] as? String == "STRING", "\(fields)")
            let createdStamp = try #require(mei["created"] as? [String: Any])
            #expect(createdStamp["userRecordName"] as? String == harness.alice.userRecordName && createdStamp["timestamp"] is NSNumber, "\(createdStamp)")
            let meiTag = try #require(mei["recordChangeTag"] as? String)

            // create again: EXISTS.
            let again = try await modify(#"{"operations": [{"operationType": "create", "record": {"recordType": "Artist", "recordName": "Mei Chen", "fields": {}}}]}"#)
            #expect(again.records.first?["serverErrorCode"] as? String == "EXISTS", "\(again.body)")

            // The reference's update example: only the given fields change, the tag is checked.
            let painting = try await modify(#"{"operations": [{"operationType": "create", "record": {"recordType": "Painting", "recordName": "101", "fields": {"title": {"value": "Dunes"}, "width": {"value": 10}, "height": {"value": 12}}}}]}"#)
            let tag101 = try #require(painting.records.first?["recordChangeTag"] as? String, "\(painting.body)")
            let updated = try await modify("""
                {"operations": [{
                  "operationType" : "update",
                  "record" : {
                    "fields" : {
                      "width": {"value": 18},
                      "height": {"value": 24}
                    },
                    "recordName" : "101",
                    "recordChangeTag" : "\(tag101)"
                  }
                }]}
                """)
            let updatedFields = try #require(updated.records.first?["fields"] as? [String: [String: Any]], "\(updated.body)")
            #expect(updatedFields["width"]?["value"] as? Int == 18 && updatedFields["width"]?["type"] as? String == "INT64")
            #expect(updatedFields["title"]?["value"] as? String == "Dunes", "update keeps the fields it does not name: \(updatedFields)")
            let stale = try await modify(#"{"operations": [{"operationType": "update", "record": {"recordName": "101", "recordChangeTag": "\#(tag101)", "fields": {"width": {"value": 1}}}}]}"#)
            #expect(stale.records.first?["serverErrorCode"] as? String == "CONFLICT", "\(stale.body)")
            #expect(stale.records.first?["recordName"] as? String == "101" && stale.records.first?["uuid"] is String)
            let untagged = try await modify(#"{"operations": [{"operationType": "update", "record": {"recordName": "101", "fields": {"width": {"value": 1}}}}]}"#)
            #expect(untagged.records.first?["serverErrorCode"] as? String == "BAD_REQUEST", "\(untagged.body)")

            // forceUpdate: no tag; merges.
            let forced = try await modify(#"{"operations": [{"operationType": "forceUpdate", "record": {"recordName": "101", "fields": {"height": {"value": 30}}}}]}"#)
            let forcedFields = try #require(forced.records.first?["fields"] as? [String: [String: Any]], "\(forced.body)")
            #expect(forcedFields["height"]?["value"] as? Int == 30 && forcedFields["title"] != nil)
            let currentTag = try #require(forced.records.first?["recordChangeTag"] as? String)

            // replace: tag checked, fields not given are gone.
            let replaced = try await modify(#"{"operations": [{"operationType": "replace", "record": {"recordName": "101", "recordChangeTag": "\#(currentTag)", "fields": {"title": {"value": "Dunes II"}}}}]}"#)
            let replacedFields = try #require(replaced.records.first?["fields"] as? [String: [String: Any]], "\(replaced.body)")
            #expect(replacedFields.keys.sorted() == ["title"], "\(replacedFields)")
            let staleReplace = try await modify(#"{"operations": [{"operationType": "replace", "record": {"recordName": "101", "recordChangeTag": "\#(currentTag)", "fields": {}}}]}"#)
            #expect(staleReplace.records.first?["serverErrorCode"] as? String == "CONFLICT", "\(staleReplace.body)")
            // forceReplace: no tag.
            let forceReplaced = try await modify(#"{"operations": [{"operationType": "forceReplace", "record": {"recordName": "101", "fields": {"width": {"value": 5}}}}]}"#)
            let forceReplacedFields = try #require(forceReplaced.records.first?["fields"] as? [String: [String: Any]], "\(forceReplaced.body)")
            #expect(forceReplacedFields.keys.sorted() == ["width"], "\(forceReplacedFields)")

            // delete: the tag is checked; forceDelete: it is not.
            let staleDelete = try await modify(#"{"operations": [{"operationType": "delete", "record": {"recordName": "Mei Chen", "recordChangeTag": "zz"}}]}"#)
            #expect(staleDelete.records.first?["serverErrorCode"] as? String == "CONFLICT", "\(staleDelete.body)")
            let deleted = try await modify(#"{"operations": [{"operationType": "delete", "record": {"recordName": "Mei Chen", "recordChangeTag": "\#(meiTag)"}}]}"#)
            #expect(deleted.records.first?["deleted"] as? Bool == true, "\(deleted.body)")
            let forceDeleted = try await modify(#"{"operations": [{"operationType": "forceDelete", "record": {"recordName": "101"}}]}"#)
            #expect(forceDeleted.records.first?["deleted"] as? Bool == true, "\(forceDeleted.body)")
            let gone = try await modify(#"{"operations": [{"operationType": "forceDelete", "record": {"recordName": "101"}}]}"#)
            #expect(gone.records.first?["serverErrorCode"] as? String == "NOT_FOUND", "\(gone.body)")

            // atomic (the default): one bad operation and nothing is written.
            let batch = try await modify(#"{"operations": [{"operationType": "create", "record": {"recordType": "Artist", "recordName": "A1", "fields": {}}}, {"operationType": "update", "record": {"recordName": "nobody-here", "recordChangeTag": "1", "fields": {}}}]}"#)
            #expect(batch.records.map { $0["serverErrorCode"] as? String } == ["ATOMIC_ERROR", "NOT_FOUND"], "\(batch.body)")
            let lookedUp = try await client.webServices("private/records/lookup", #"{"records": [{"recordName": "A1"}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(lookedUp.records.first?["serverErrorCode"] as? String == "NOT_FOUND", "the atomic batch wrote nothing: \(lookedUp.body)")
            let loose = try await modify(#"{"atomic": false, "operations": [{"operationType": "create", "record": {"recordType": "Artist", "recordName": "A1", "fields": {}}}, {"operationType": "update", "record": {"recordName": "nobody-here", "recordChangeTag": "1", "fields": {}}}]}"#)
            #expect(loose.records.first?["recordName"] as? String == "A1" && loose.records.first?["serverErrorCode"] == nil, "\(loose.body)")
            #expect(loose.records.last?["serverErrorCode"] as? String == "NOT_FOUND", "\(loose.body)")
        }
    }
}
