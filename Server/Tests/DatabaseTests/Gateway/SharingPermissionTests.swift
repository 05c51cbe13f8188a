@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import Testing

/// docs/API.md §1's permission table through `/graphql`, for every role and
/// status of a zone-wide share: what each may do, and that each denied case
/// is denied with the code the table gives (a stranger's answers are the
/// same as for a zone that does not exist).
@Suite("The permission table over HTTP")
struct SharingPermissionTests {
    enum Role: String, CaseIterable {
        case owner, readOnly, readWrite, administrator, pending, removed, stranger
    }

    @Test("issue 64: a READ_ONLY administrator gives no one more than READ_ONLY, themselves included, and so cannot write the owner's records")
    func administratorGivesNoMoreThanTheirOwn() async throws {
        let harness = try await GatewayHarness.make()
        let (carol, carolToken) = try await addUser("carol", on: harness.endpoint)
        let (dave, _) = try await addUser("dave", on: harness.endpoint)
        try await harness.test { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Team", [contact("seed", name: "Seed")])
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Team", participants: [{userRecordName: "\(carol.userRecordName)", permission: READ_ONLY, role: ADMINISTRATOR}, \
                {userRecordName: "\(dave.userRecordName)", permission: READ_ONLY}]) { url } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            let accepted = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: carolToken.string)
            #expect(accepted.object["status"] as? String == "ACCEPTED", "\(accepted.body)")
            let asAdmin = "zoneName: \"Team\", ownerName: \"\(harness.alice.userRecordName)\""
            func set(_ who: String, _ permission: String) async throws -> Answer {
                try await client.call("setParticipant", """
                    mutation { setParticipant(\(asAdmin), participant: {userRecordName: "\(who)", permission: \(permission), role: PRIVATE_USER}) { url } }
                    """, token: carolToken.string)
            }
            let selfPromotion = try await set(carol.userRecordName, "READ_WRITE")
            #expect(selfPromotion.code == "PERMISSION_FAILURE", "\(selfPromotion.body)")
            let selfAsUser = try await set(carol.userRecordName, "READ_ONLY")
            #expect(selfAsUser.code == "PERMISSION_FAILURE", "an administrator's own row is not theirs to change: \(selfAsUser.body)")
            let raised = try await set(dave.userRecordName, "READ_WRITE")
            #expect(raised.code == "PERMISSION_FAILURE", "\(raised.body)")
            let invited = try await client.call("setParticipant", """
                mutation { setParticipant(\(asAdmin), participant: {email: "guest@example.com", permission: READ_WRITE}) { url } }
                """, token: carolToken.string)
            #expect(invited.code == "PERMISSION_FAILURE", "\(invited.body)")
            let same = try await set(dave.userRecordName, "READ_ONLY")
            #expect(same.code == nil, "what the administrator has they may give: \(same.body)")
            // Whatever was tried, Carol still cannot write Alice's records.
            let write = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: {\(asAdmin)}, save: $s) { errors { code } } }
                """, ["s": [contact("by-carol", name: "x")]], token: carolToken.string)
            let code = write.code ?? (write.object["errors"] as? [[String: Any]])?.first?["code"] as? String
            #expect(code == "PERMISSION_FAILURE", "\(write.body)")
        }
    }

    @Test("every role and status against reads, writes and the share itself")
    func permissionTable() async throws {
        let harness = try await GatewayHarness.make()
        var knownTokens: [Role: String] = [.owner: harness.aliceToken, .stranger: harness.bobToken]
        var knownNames: [Role: String] = [:]
        for role in [Role.readOnly, .readWrite, .administrator, .pending, .removed] {
            let (user, token) = try await addUser(role.rawValue, email: "\(role.rawValue.lowercased())@example.com", on: harness.endpoint)
            knownTokens[role] = token.string
            knownNames[role] = user.userRecordName
        }
        let tokens = knownTokens, names = knownNames
        try await harness.test { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Team", [contact("seed", name: "Seed")] + Role.allCases.map { contact("of-\($0.rawValue)", name: $0.rawValue) })
            func invite(_ role: Role, _ permission: String, _ kind: String = "PRIVATE_USER") -> String {
                "{userRecordName: \"\(names[role]!)\", permission: \(permission), role: \(kind)}"
            }
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Team", participants: [\(invite(.readOnly, "READ_ONLY")), \(invite(.readWrite, "READ_WRITE")), \
                \(invite(.administrator, "READ_WRITE", "ADMINISTRATOR")), \(invite(.pending, "READ_WRITE")), \(invite(.removed, "READ_WRITE"))]) { url } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            for role in [Role.readOnly, .readWrite, .administrator, .removed] {
                let accepted = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: tokens[role]!)
                #expect(accepted.object["status"] as? String == "ACCEPTED", "\(role) \(accepted.body)")
            }
            let removal = try await client.call("removeParticipant", "mutation { removeParticipant(zoneName: \"Team\", userRecordName: \"\(names[.removed]!)\") { url } }", token: alice)
            #expect(removal.code == nil, "\(removal.body)")

            let owner = harness.alice.userRecordName
            func zone(_ role: Role) -> String {
                role == .owner ? "scope: PRIVATE, zone: {zoneName: \"Team\"}" : "scope: SHARED, zone: {zoneName: \"Team\", ownerName: \"\(owner)\"}"
            }
            func expect(_ role: Role, _ operation: String, _ answer: Answer, _ expected: String?, sourceLocation: SourceLocation = #_sourceLocation) {
                #expect(answer.code == expected, "\(role) \(operation): \(answer.body)", sourceLocation: sourceLocation)
            }
            func recordError(_ answer: Answer) -> String? {
                answer.code ?? (answer.object["errors"] as? [[String: Any]])?.first?["code"] as? String
            }
            let canRead: Set<Role> = [.owner, .readOnly, .readWrite, .administrator]
            let canWrite: Set<Role> = [.owner, .readWrite, .administrator]
            let canManage: Set<Role> = [.owner, .administrator]

            for role in Role.allCases {
                let token = tokens[role]!
                let notFound = canRead.contains(role) ? nil : "ZONE_NOT_FOUND"
                // read / query
                let read = try await client.call("records", "{ records(\(zone(role)), recordType: \"Contact\") { records { recordName } } }", token: token)
                expect(role, "records", read, notFound)
                if canRead.contains(role) { #expect((read.object["records"] as? [Any])?.count == 8, "\(role) sees every record") }
                let listed = try await client.call("zones", "{ zones(scope: SHARED) { zoneName } }", token: token)
                #expect(listed.list.contains { $0["zoneName"] as? String == "Team" } == (canRead.contains(role) && role != .owner), "\(role) zones(SHARED)")
                // create, modify, delete records
                let writeCode = canWrite.contains(role) ? nil : notFound ?? "PERMISSION_FAILURE"
                let created = try await client.call("modifyRecords", """
                    mutation($s: [RecordInput!]) { modifyRecords(\(zone(role)), save: $s) { saved { recordName } errors { code } } }
                    """, ["s": [contact("new-\(role.rawValue)", name: "New")]], token: token)
                #expect(recordError(created) == writeCode, "\(role) create: \(created.body)")
                let modified = try await client.call("modifyRecords", """
                    mutation($s: [RecordInput!]) { modifyRecords(\(zone(role)), save: $s, savePolicy: ALL_KEYS) { saved { recordName } errors { code } } }
                    """, ["s": [contact("seed", name: "Changed by \(role.rawValue)")]], token: token)
                #expect(recordError(modified) == writeCode, "\(role) modify: \(modified.body)")
                if canRead.contains(role) {
                    // With the change tag the caller read: the same answer.
                    let read = try await client.call("lookup", "{ lookup(\(zone(role)), recordNames: [\"seed\"]) { record { recordChangeTag } } }", token: token)
                    let tag = ((read.list.first?["record"] as? [String: Any])?["recordChangeTag"] as? String) ?? ""
                    let seed = contact("seed", name: "Changed again by \(role.rawValue)", tag: tag)
                    let tagged = try await client.call("modifyRecords", """
                        mutation($s: [RecordInput!]) { modifyRecords(\(zone(role)), save: $s) { saved { recordName } errors { code message } } }
                        """, ["s": [seed]], token: token)
                    #expect(!tag.isEmpty && recordError(tagged) == writeCode, "\(role) modify with its change tag: \(tagged.body)")
                }
                let deleted = try await client.call("modifyRecords", "mutation { modifyRecords(\(zone(role)), delete: [\"of-\(role.rawValue)\"]) { deleted errors { code } } }", token: token)
                #expect(recordError(deleted) == writeCode, "\(role) delete: \(deleted.body)")
                // the share itself
                let viewed = try await client.call("share", "{ share(\(zone(role))) { participants { user { userRecordName } role } } }", token: token)
                expect(role, "share", viewed, notFound)
                if canRead.contains(role) {
                    let seen = (viewed.object["participants"] as? [[String: Any]] ?? []).compactMap { ($0["user"] as? [String: Any])?["userRecordName"] as? String }
                    let expected = canManage.contains(role) ? 5 : 2  // owner, ro, rw, admin, pending (removed is not listed) / owner and self
                    #expect(seen.count == expected && seen.first == owner, "\(role) sees \(seen)")
                }
                let ownerArgument = role == .owner ? "" : ", ownerName: \"\(owner)\""
                let added = try await client.call("setParticipant", """
                    mutation { setParticipant(zoneName: "Team"\(ownerArgument), participant: {email: "guest-\(role.rawValue.lowercased())@example.com", permission: READ_ONLY}) { url } }
                    """, token: token)
                expect(role, "setParticipant", added, canManage.contains(role) ? nil : notFound ?? "PERMISSION_FAILURE")
                let deletedShare = try await client.call("deleteShare", "mutation { deleteShare(zoneName: \"Team\") }", token: token)
                if role == .owner {
                    #expect(deletedShare.code == nil)
                } else {
                    expect(role, "deleteShare", deletedShare, "ZONE_NOT_FOUND")
                }
                if role == .owner {
                    // Put the share back as it was for the roles that follow.
                    let again = try await client.call("saveShare", """
                        mutation { saveShare(zoneName: "Team", participants: [\(invite(.readOnly, "READ_ONLY")), \(invite(.readWrite, "READ_WRITE")), \
                        \(invite(.administrator, "READ_WRITE", "ADMINISTRATOR")), \(invite(.pending, "READ_WRITE")), \(invite(.removed, "READ_WRITE"))]) { url } }
                        """, token: alice)
                    let newURL = try #require(again.object["url"] as? String)
                    #expect(newURL != url, "a re-created share has a new URL")
                    for accepting in [Role.readOnly, .readWrite, .administrator, .removed] {
                        _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(newURL)\") { status } }", token: tokens[accepting]!)
                    }
                    _ = try await client.call("removeParticipant", "mutation { removeParticipant(zoneName: \"Team\", userRecordName: \"\(names[.removed]!)\") { url } }", token: alice)
                }
            }

            // Administrators manage PRIVATE_USERs only.
            let admin = tokens[.administrator]!
            let asAdmin = ", ownerName: \"\(owner)\""
            let promote = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Team\"\(asAdmin), participant: \(invite(.readOnly, "READ_WRITE", "ADMINISTRATOR"))) { url } }", token: admin)
            #expect(promote.code == "PERMISSION_FAILURE", "\(promote.body)")
            let change = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Team\"\(asAdmin), participant: \(invite(.readOnly, "READ_WRITE"))) { participants { user { userRecordName } permission } } }", token: admin)
            #expect(change.code == nil, "\(change.body)")
            let removeOwner = try await client.call("removeParticipant", "mutation { removeParticipant(zoneName: \"Team\"\(asAdmin), userRecordName: \"\(owner)\") { url } }", token: admin)
            #expect(removeOwner.code == "INVALID_ARGUMENTS")
            _ = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Team\", participant: \(invite(.pending, "READ_WRITE", "ADMINISTRATOR"))) { url } }", token: alice)
            let removeOther = try await client.call("removeParticipant", "mutation { removeParticipant(zoneName: \"Team\"\(asAdmin), userRecordName: \"\(names[.pending]!)\") { url } }", token: admin)
            #expect(removeOther.code == "PERMISSION_FAILURE", "administrators do not remove administrators: \(removeOther.body)")
            let demoteOther = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Team\"\(asAdmin), participant: \(invite(.pending, "READ_ONLY"))) { url } }", token: admin)
            #expect(demoteOther.code == "PERMISSION_FAILURE", "nor change them: \(demoteOther.body)")
            let readWrite = tokens[.readWrite]!
            let notAdmin = try await client.call("removeParticipant", "mutation { removeParticipant(zoneName: \"Team\"\(asAdmin), userRecordName: \"\(names[.readOnly]!)\") { url } }", token: readWrite)
            #expect(notAdmin.code == "PERMISSION_FAILURE")

            // A permission change takes effect with the very next request.
            let readOnly = tokens[.readOnly]!
            let nowWritable = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(\(zone(.readOnly)), save: $s) { errors { code } } }
                """, ["s": [contact("by-promoted", name: "x")]], token: readOnly)
            #expect((nowWritable.object["errors"] as? [[String: Any]])?.isEmpty == true, "\(nowWritable.body)")

            // Removed: nothing, and no accepting again until added back.
            let removed = tokens[.removed]!
            let url2 = try #require(try await client.call("share", "{ share(\(zone(.owner))) { url } }", token: alice).object["url"] as? String)
            let retry = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url2)\") { status } }", token: removed)
            #expect(retry.code == "PERMISSION_FAILURE")
            _ = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Team\", participant: \(invite(.removed, "READ_ONLY"))) { url } }", token: alice)
            let back = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url2)\") { status permission } }", token: removed)
            #expect(back.object["status"] as? String == "ACCEPTED" && back.object["permission"] as? String == "READ_ONLY", "\(back.body)")

            // Leaving ends access with the next request.
            let left = try await client.call("leaveShare", "mutation { leaveShare(zone: {zoneName: \"Team\", ownerName: \"\(owner)\"}) }", token: readWrite)
            #expect(left.data as? Bool == true, "\(left.body)")
            let afterLeave = try await client.call("records", "{ records(\(zone(.readWrite)), recordType: \"Contact\") { records { recordName } } }", token: readWrite)
            #expect(afterLeave.code == "ZONE_NOT_FOUND")
            let ownerLeaves = try await client.call("leaveShare", "mutation { leaveShare(zone: {zoneName: \"Team\", ownerName: \"\(owner)\"}) }", token: alice)
            #expect(ownerLeaves.code == "ZONE_NOT_FOUND", "an owner stops sharing with deleteShare")

            // A stranger's answers are the same as for a zone that does not exist.
            let stranger = harness.bobToken
            let existing = try await client.call("records", "{ records(scope: SHARED, zone: {zoneName: \"Team\", ownerName: \"\(owner)\"}, recordType: \"Contact\") { records { recordName } } }", token: stranger)
            let missing = try await client.call("records", "{ records(scope: SHARED, zone: {zoneName: \"Nowhere\", ownerName: \"\(owner)\"}, recordType: \"Contact\") { records { recordName } } }", token: stranger)
            #expect(existing.code == missing.code && existing.message == missing.message)
            let existingShare = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Team\"\(asAdmin), participant: {email: \"x@example.com\", permission: READ_ONLY}) { url } }", token: stranger)
            let missingShare = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Nowhere\"\(asAdmin), participant: {email: \"x@example.com\", permission: READ_ONLY}) { url } }", token: stranger)
            #expect(existingShare.code == missingShare.code && existingShare.message == missingShare.message)

            // Deleting the share ends everyone's access at once.
            let deletedShare = try await client.call("deleteShare", "mutation { deleteShare(zoneName: \"Team\") }", token: alice)
            #expect(deletedShare.data as? Bool == true)
            let twice = try await client.call("deleteShare", "mutation { deleteShare(zoneName: \"Team\") }", token: alice)
            #expect(twice.data as? Bool == false)
            let adminAfter = try await client.call("records", "{ records(\(zone(.administrator)), recordType: \"Contact\") { records { recordName } } }", token: admin)
            #expect(adminAfter.code == "ZONE_NOT_FOUND")
        }
    }

    @Test("bad participant input and unknown targets are located errors")
    func badInput() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Club\") { zoneName } }", token: alice)
            let cases: [(String, String)] = [
                ("mutation { saveShare(zoneName: \"Club\", participants: [{email: \"a@b.c\", phone: \"123\", permission: READ_ONLY}]) { url } }", "INVALID_ARGUMENTS"),
                ("mutation { saveShare(zoneName: \"Club\", participants: [{email: \"not-an-address\", permission: READ_ONLY}]) { url } }", "INVALID_ARGUMENTS"),
                ("mutation { saveShare(zoneName: \"Club\", participants: [{email: \"a@b.c\", permission: NONE}]) { url } }", "INVALID_ARGUMENTS"),
                ("mutation { saveShare(zoneName: \"Club\", participants: [{email: \"a@b.c\", permission: READ_ONLY, role: OWNER}]) { url } }", "INVALID_ARGUMENTS"),
                ("mutation { saveShare(zoneName: \"Club\", participants: [{userRecordName: \"_nobody\", permission: READ_ONLY}]) { url } }", "INVALID_ARGUMENTS"),
                ("mutation { saveShare(zoneName: \"Club\", rootRecordName: \"missing\") { url } }", "UNKNOWN_ITEM"),
                ("mutation { saveShare(zoneName: \"Nowhere\") { url } }", "ZONE_NOT_FOUND"),
                ("mutation { setParticipant(zoneName: \"Club\", participant: {email: \"a@b.c\", permission: READ_ONLY}) { url } }", "UNKNOWN_ITEM"),
                ("mutation { removeParticipant(zoneName: \"Club\") { url } }", "INVALID_ARGUMENTS"),
                ("{ shareMetadata(url: \"http://x/share/short\") { title } }", "INVALID_ARGUMENTS"),
                ("{ discoverUser { userRecordName } }", "INVALID_ARGUMENTS"),
            ]
            for (document, code) in cases {
                let answer = try await client.call("x", document, token: alice)
                #expect(answer.code == code, "\(document): \(answer.body)")
                let locations = firstError(answer.body)["locations"] as? [[String: Any]]
                #expect(locations?.isEmpty == false, "\(document) has a location")
            }
            // Owner inviting herself; removing somebody who is not there.
            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Club\") { url } }", token: alice)
            let herself = try await client.call("setParticipant", "mutation { setParticipant(zoneName: \"Club\", participant: {userRecordName: \"\(harness.alice.userRecordName)\", permission: READ_ONLY}) { url } }", token: alice)
            #expect(herself.code == "INVALID_ARGUMENTS")
            let nobody = try await client.call("removeParticipant", "mutation { removeParticipant(zoneName: \"Club\", email: \"nobody@example.com\") { url } }", token: alice)
            #expect(nobody.code == "UNKNOWN_ITEM")
            // discoverUser finds by email, and shows only the contact asked with.
            let found = try await client.call("discoverUser", "{ discoverUser(email: \"ALICE@example.com\") { userRecordName email phone } }", token: harness.bobToken)
            #expect(found.object["userRecordName"] as? String == harness.alice.userRecordName, "\(found.body)")
            let unknown = try await client.call("discoverUser", "{ discoverUser(email: \"nobody@example.com\") { userRecordName } }", token: harness.bobToken)
            #expect(unknown.data is NSNull && unknown.code == nil)
        }
    }
}
