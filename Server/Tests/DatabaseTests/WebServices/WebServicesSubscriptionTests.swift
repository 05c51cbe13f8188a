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

/// subscriptions/*, tokens/register and the user lookups through Web
/// Services, onto Canopy's push subscriptions, devices and discovery.
@Suite("Web Services: subscriptions, tokens and users", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesSubscriptionTests {
    @Test("zone and query subscriptions are made, listed, looked up and deleted; tokens/register registers an APNs device; tokens/create makes a web courier")
    func subscriptions() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String? = nil, method: HTTPRequest.Method = .post) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: harness.aliceToken, method: method)
            }
            _ = try await call("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Note", "recordName": "n", "fields": {"priority": {"value": 1}}}}]}"#)
            let made = try await call("private/subscriptions/modify", """
                {"operations": [
                  {"operationType": "create", "subscription": {"subscriptionID": "zone-sub", "subscriptionType": "zone", "zoneID": {"zoneName": "_defaultZone"}}},
                  {"operationType": "create", "subscription": {"subscriptionID": "query-sub", "subscriptionType": "query",
                    "query": {"recordType": "Note", "filterBy": [{"fieldName": "priority", "comparator": "GREATER_THAN", "fieldValue": {"value": 2}}]},
                    "firesOn": ["create", "update"]}},
                  {"operationType": "create", "subscription": {"subscriptionID": "bad", "subscriptionType": "sometimes"}}
                ]}
                """)
            let subscriptions = made.body["subscriptions"] as? [[String: Any]] ?? []
            #expect(subscriptions.count == 3, "\(made.body)")
            #expect(subscriptions.first?["subscriptionType"] as? String == "zone", "\(made.body)")
            #expect(subscriptions.dropFirst().first?["firesOn"] as? [String] == ["create", "update"], "\(made.body)")
            #expect(subscriptions.last?["serverErrorCode"] as? String == "BAD_REQUEST", "\(made.body)")
            let listed = try await call("private/subscriptions/list", method: .get)
            #expect(Set((listed.body["subscriptions"] as? [[String: Any]] ?? []).compactMap { $0["subscriptionID"] as? String }) == ["zone-sub", "query-sub"], "\(listed.body)")
            let looked = try await call("private/subscriptions/lookup", #"{"subscriptions": [{"subscriptionID": "query-sub"}, {"subscriptionID": "nope"}]}"#)
            let found = looked.body["subscriptions"] as? [[String: Any]] ?? []
            #expect(((found.first?["query"] as? [String: Any])?["recordType"] as? String) == "Note" && found.first?["zoneWide"] as? Bool == true, "\(looked.body)")
            #expect(found.last?["serverErrorCode"] as? String == "NOT_FOUND", "\(looked.body)")
            let deleted = try await call("private/subscriptions/modify", #"{"operations": [{"operationType": "delete", "subscription": {"subscriptionID": "zone-sub"}}]}"#)
            #expect((deleted.body["subscriptions"] as? [[String: Any]])?.first?["deleted"] as? Bool == true, "\(deleted.body)")
            let after = try await call("private/subscriptions/list", method: .get)
            #expect((after.body["subscriptions"] as? [[String: Any]])?.count == 1, "\(after.body)")

            let device = String(repeating: "ab", count: 32)
            let registered = try await call("tokens/register", #"{"apnsEnvironment": "development", "apnsToken": "\#(device)"}"#)
            #expect(registered.status == .ok && registered.body["apnsEnvironment"] as? String == "development", "\(registered.body)")
            let devices = try await client.call("devices", "{ devices { kind apnsEnvironment apnsTopic } }", as: harness.aliceToken)
            let first = (devices.data as? [[String: Any]])?.first
            #expect(first?["apnsEnvironment"] as? String == "SANDBOX" && first?["apnsTopic"] as? String == "com.example.canopy", "\(devices.body)")
            let courier = try await call("tokens/create", #"{"apnsEnvironment": "production"}"#)
            #expect(courier.status == .ok && courier.body["webcourierURL"] is String, "\(courier.body)")
        }
    }

    @Test("users/lookup/email and users/discover find people by address; users/lookup/id by record name")
    func users() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let byEmail = try await client.webServices("public/users/lookup/email", #"{"users": [{"emailAddress": "alice@example.com"}, {"emailAddress": "nobody@example.com"}]}"#, apiToken: token, webAuthToken: harness.bobToken)
            #expect(byEmail.status == .ok, "\(byEmail.body)")
            let users = byEmail.body["users"] as? [[String: Any]] ?? []
            #expect(users.first?["userRecordName"] as? String == harness.alice.userRecordName && users.first?["firstName"] as? String == "alice", "\(byEmail.body)")
            #expect(users.last?["serverErrorCode"] as? String == "NOT_FOUND", "\(byEmail.body)")
            let discovered = try await client.webServices("public/users/discover", #"{"lookupInfos": [{"emailAddress": "alice@example.com"}]}"#, apiToken: token, webAuthToken: harness.bobToken)
            #expect(((discovered.body["users"] as? [[String: Any]])?.first?["userRecordName"] as? String) == harness.alice.userRecordName, "\(discovered.body)")
            let byID = try await client.webServices("public/users/lookup/id", #"{"users": [{"userRecordName": "\#(harness.alice.userRecordName)"}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(byID.status == .ok && ((byID.body["users"] as? [[String: Any]])?.first?["userRecordName"] as? String) == harness.alice.userRecordName, "\(byID.body)")
        }
    }
}
