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

/// Who may read and write, through Web Services: the public database's
/// grant matrix of ``PublicGrantTable`` (the cells GraphQL's
/// `PublicDatabaseTests.matrix` asks), and a shared zone's participants.
/// Row-level security decides for both doors: a policy broken turns both red.
@Suite("Web Services: the permission matrix", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesPermissionTests {
    @Test("the public database over Web Services: who × READ, CREATE, WRITE, DELETE × four types' grants")
    func publicMatrix() async throws {
        let world = try await PublicDatabaseTests.world()
        let apiToken = try await WebServicesFixture.apiToken(on: world.harness.endpoint)
        try await world.harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func modify(_ body: String, as who: String) async throws -> WebServicesAnswer {
                try await client.webServices("public/records/modify", body, apiToken: apiToken, webAuthToken: world.token(who))
            }
            for type in PublicGrantTable.types {
                let names = ["\(type)1"] + PublicGrantTable.callers.map { "del-\($0)-\(type)" }
                let operations = names.map { #"{"operationType": "create", "record": {"recordType": "\#(type)", "recordName": "\#($0)", "fields": {"title": {"value": "first"}}}}"# }
                let made = try await modify(#"{"operations": [\#(operations.joined(separator: ","))]}"#, as: PublicGrantTable.creator(of: type))
                #expect(made.status == .ok && made.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(made.body)")
            }
            var failures: [String] = []
            for who in PublicGrantTable.callers {
                for type in PublicGrantTable.types {
                    for privilege in PublicGrantTable.Privilege.allCases {
                        let allowed = PublicGrantTable.allows(who, privilege, type)
                        let cell = "\(who) \(privilege.rawValue) \(type) (\(allowed ? "allowed" : "refused"))"
                        // What a refused write says: a person is denied; nobody is asked to sign in.
                        func refused(_ answer: WebServicesAnswer) -> Bool {
                            who == "nobody"
                                ? answer.status.code == 421 && answer.code == "AUTHENTICATION_REQUIRED" && answer.body["redirectURL"] is String
                                : answer.status == .ok && ["ACCESS_DENIED", "NOT_FOUND"].contains(answer.records.first?["serverErrorCode"] as? String ?? "")
                        }
                        switch privilege {
                        case .read:
                            let found = try await client.webServices("public/records/lookup", #"{"records": [{"recordName": "\#(type)1"}]}"#, apiToken: apiToken, webAuthToken: world.token(who))
                            let query = try await client.webServices("public/records/query", #"{"query": {"recordType": "\#(type)"}}"#, apiToken: apiToken, webAuthToken: world.token(who))
                            let looked = allowed
                                ? found.records.first?["recordName"] as? String == "\(type)1" && found.records.first?["serverErrorCode"] == nil
                                : found.records.first?["serverErrorCode"] as? String == "NOT_FOUND"
                            let listed = query.records.contains { $0["recordName"] as? String == "\(type)1" }
                            if !looked || listed != allowed || query.status != .ok { failures.append("\(cell): \(found.body) / \(query.body)") }
                        case .create:
                            let answer = try await modify(#"{"operations": [{"operationType": "create", "record": {"recordType": "\#(type)", "recordName": "new-\#(who)-\#(type)", "fields": {"title": {"value": "x"}}}}]}"#, as: who)
                            let ok = allowed ? answer.status == .ok && answer.records.first?["serverErrorCode"] == nil : refused(answer)
                            if !ok { failures.append("\(cell): \(answer.status) \(answer.body)") }
                        case .write:
                            let answer = try await modify(#"{"operations": [{"operationType": "forceReplace", "record": {"recordType": "\#(type)", "recordName": "\#(type)1", "fields": {"title": {"value": "by \#(who)"}}}}]}"#, as: who)
                            let ok = allowed ? answer.status == .ok && answer.records.first?["serverErrorCode"] == nil : refused(answer)
                            if !ok { failures.append("\(cell): \(answer.status) \(answer.body)") }
                        case .delete:
                            let answer = try await modify(#"{"operations": [{"operationType": "forceDelete", "record": {"recordName": "del-\#(who)-\#(type)"}}]}"#, as: who)
                            let ok = allowed ? answer.records.first?["deleted"] as? Bool == true : refused(answer)
                            if !ok { failures.append("\(cell): \(answer.status) \(answer.body)") }
                        }
                    }
                }
            }
            #expect(failures.isEmpty, "\(failures.count) cells differ:\n\(failures.joined(separator: "\n"))")
        }
        let left = try await TestDatabase.withConnection(world.harness.endpoint) { connection in
            try await connection.texts("SELECT record_name FROM canopy.records WHERE record_name LIKE 'del-%' ORDER BY 1")
        }.compactMap { $0 }
        let expected = PublicGrantTable.callers.flatMap { who in
            PublicGrantTable.types.filter { !PublicGrantTable.allows(who, .delete, $0) }.map { "del-\(who)-\($0)" }
        }.sorted()
        #expect(left == expected, "nothing refused was deleted")
    }

    @Test("a shared zone over Web Services: READ_WRITE writes, READ_ONLY reads only, a stranger and a removed participant see nothing")
    func sharedMatrix() async throws {
        let harness = try await GatewayHarness.make()
        let (_, carolToken) = try await addUser("carol", email: "carol@example.com", on: harness.endpoint)
        let (_, daveToken) = try await addUser("dave", email: "dave@example.com", on: harness.endpoint)
        let (_, erinToken) = try await addUser("erin", email: "erin@example.com", on: harness.endpoint)
        let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String, as token: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: apiToken, webAuthToken: token)
            }
            _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Team"}}}]}"#, as: harness.aliceToken)
            _ = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Team"}, "operations": [{"operationType": "create", "record": {"recordType": "Task", "recordName": "t1", "fields": {"title": {"value": "plan"}}}}]}"#, as: harness.aliceToken)
            func participant(_ email: String, _ permission: String) -> String {
                #"{"type": "USER", "permission": "\#(permission)", "acceptanceStatus": "INVITED", "userIdentity": {"lookupInfo": {"emailAddress": "\#(email)"}}}"#
            }
            let shared = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Team"}, "operations": [{"operationType": "create", "record": {"recordType": "cloudkit.share", "publicPermission": "NONE", "participants": [\#(participant("carol@example.com", "READ_WRITE")), \#(participant("dave@example.com", "READ_ONLY")), \#(participant("erin@example.com", "READ_ONLY"))]}}]}"#, as: harness.aliceToken)
            let guid = try #require((shared.records.first?["shortGUID"] as? [String: Any])?["value"] as? String, "\(shared.body)")
            for token in [carolToken.string, daveToken.string, erinToken.string] {
                let accepted = try await call("public/records/accept", #"{"shortGUIDs": [{"value": "\#(guid)"}]}"#, as: token)
                #expect(((accepted.body["results"] as? [[String: Any]])?.first)?["participantStatus"] as? String == "ACCEPTED", "\(accepted.body)")
            }
            // The owner removes erin.
            let removed = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Team"}, "operations": [{"operationType": "update", "record": {"recordType": "cloudkit.share", "recordName": "cloudkit.zoneshare", "participants": [{"acceptanceStatus": "REMOVED", "userIdentity": {"lookupInfo": {"emailAddress": "erin@example.com"}}}]}}]}"#, as: harness.aliceToken)
            #expect(removed.records.first?["serverErrorCode"] == nil, "\(removed.body)")
            let zone = #"{"zoneName": "Team", "ownerRecordName": "\#(harness.alice.userRecordName)"}"#
            var failures: [String] = []
            for (who, token, reads, writes) in [("carol", carolToken.string, true, true), ("dave", daveToken.string, true, false),
                                                ("erin", erinToken.string, false, false), ("bob", harness.bobToken, false, false)] {
                let read = try await call("shared/records/lookup", #"{"zoneID": \#(zone), "records": [{"recordName": "t1"}]}"#, as: token)
                let didRead = read.status == .ok && read.records.first?["recordName"] as? String == "t1" && read.records.first?["serverErrorCode"] == nil
                if didRead != reads { failures.append("\(who) read: \(read.status) \(read.body)") }
                let write = try await call("shared/records/modify", #"{"zoneID": \#(zone), "operations": [{"operationType": "forceUpdate", "record": {"recordName": "t1", "recordType": "Task", "fields": {"title": {"value": "by \#(who)"}}}}]}"#, as: token)
                let didWrite = write.status == .ok && write.records.first?["serverErrorCode"] == nil
                if didWrite != writes { failures.append("\(who) write: \(write.status) \(write.body)") }
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        }
    }
}
