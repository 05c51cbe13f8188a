@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import PostgresNIO
import Testing

/// The issue-3 operations in SHARED scope, on a share set up directly in
/// the database (the sharing mutations come with the sharing work): what a
/// READ_ONLY participant can and cannot do, and the statement timeout.
@Suite("SHARED scope and limits over HTTP")
struct SharedScopeTests {
    @Test("a READ_ONLY participant reads the shared zone and gets PERMISSION_FAILURE on writes; leaving ends access")
    func readOnlyParticipant() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Family\") { zoneName } }", token: harness.aliceToken)
            _ = try await save(client, token: harness.aliceToken, zone: "Family", [fast("f1", hours: 1, end: 1), fast("f2", hours: 2, end: 2)])
            // Each row given its owner (the distribution column on Citus).
            let alice = harness.alice.id
            try await TestDatabase.withConnection(harness.endpoint) { connection in
                let share = try await connection.texts(PostgresQuery(unsafeSQL: """
                    INSERT INTO canopy.shares (zone_id, owner_id) SELECT id, owner_id FROM canopy.zones WHERE owner_id = \(alice) AND name = 'Family' RETURNING id::text
                    """)).compactMap { $0 }.first ?? "NULL"
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO canopy.participants (share_id, owner_id, user_id, permission, status) VALUES (\(share), \(alice), \(harness.bob.id), 'READ_ONLY', 'ACCEPTED')
                    """), logger: TestDatabase.logger)
            }
            let zone = "{zoneName: \"Family\", ownerName: \"\(harness.alice.userRecordName)\"}"
            let zones = try await client.call("zones", "{ zones(scope: SHARED) { zoneName ownerName } }", token: harness.bobToken)
            #expect(zones.list.count == 1)
            #expect(zones.list.first?["ownerName"] as? String == harness.alice.userRecordName)
            let records = try await client.call("records", "{ records(scope: SHARED, zone: \(zone), recordType: \"Fast\", sort: [{field: \"hours\", direction: DESC}]) { records { recordName created { userRecordName } } } }", token: harness.bobToken)
            #expect((records.object["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["f2", "f1"])
            let write = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: \(zone), save: $s, delete: ["f1"], atomic: false) { saved { recordName } errors { recordName code } } }
                """, ["s": [fast("new", hours: 3, end: 3), fast("f2", hours: 9, end: 2)]], token: harness.bobToken)
            let codes = (write.object["errors"] as? [[String: Any]] ?? []).map { $0["code"] as? String }
            #expect(codes.allSatisfy { $0 == "PERMISSION_FAILURE" } && codes.count == 3, "\(write.body)")
            // In PRIVATE scope the zone is not bob's: it does not exist for him there.
            let privately = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Family\"}, recordNames: [\"f1\"]) { recordName } }", token: harness.bobToken)
            #expect(privately.code == "ZONE_NOT_FOUND")
            // Leaving (deleteZone in SHARED scope) ends access with the next request; alice's data stays.
            let left = try await client.call("deleteZone", "mutation { deleteZone(scope: SHARED, zone: \(zone)) }", token: harness.bobToken)
            #expect(left.data as? Bool == true)
            let after = try await client.call("records", "{ records(scope: SHARED, zone: \(zone), recordType: \"Fast\") { records { recordName } } }", token: harness.bobToken)
            #expect(after.code == "ZONE_NOT_FOUND")
            let owners = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Family\"}, recordType: \"Fast\") { records { recordName } } }", token: harness.aliceToken)
            #expect((owners.object["records"] as? [Any])?.count == 2)
        }
    }

    @Test("a request that outruns the statement timeout is LIMIT_EXCEEDED, naming it")
    func statementTimeout() async throws {
        let harness = try await GatewayHarness.make()
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.asUser(harness.alice.id, actAs: true, commit: true) { connection in
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, fields)
                    SELECT z.id, z.owner_id, 'r' || g, 'Note', jsonb_build_object('text', repeat('lorem ipsum dolor ', 50) || g)
                      FROM canopy.zones z, generate_series(1, 5000) g WHERE z.owner_id = \(harness.alice.id) AND z.name = '_defaultZone'
                    """), logger: TestDatabase.logger)
            }
        }
        try await harness.test(configuration: GatewayConfiguration(statementTimeout: .milliseconds(5))) { client in
            let answer = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordType: \"Note\", filter: \"self CONTAINS 'nothing matches this'\") { records { recordName } } }", token: harness.aliceToken)
            #expect(answer.code == "LIMIT_EXCEEDED", "\(answer.body) \(harness.logs.text.split(separator: "\n").filter { $0.contains("canopy.error") })")
            #expect(answer.message.contains("statement timeout"))
        }
    }
}
