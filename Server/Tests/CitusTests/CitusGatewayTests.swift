@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import Testing

/// The gateway on the Citus engine, end to end through `/graphql`
/// (issue 67): every request says who it acts for by `canopy.act_as`,
/// reads in a read-only transaction. Canopy's tables are still on the
/// coordinator (step 1 distributes them); this is the scenario that must
/// keep passing once they are distributed.
@Suite("Citus: the gateway end to end", .serialized)
struct CitusGatewayTests {
    @Test("a zone shared with a public read-only link: the owner writes, another user accepts, reads a sorted range and cannot write; the link closed, the zone is gone for him")
    func publicShare() async throws {
        let harness = try await GatewayHarness.makeOnCitus()
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"FastingLog\") { zoneName } }", token: alice)
            let saved = try await save(client, token: alice, zone: "FastingLog", (1...8).map { fast("f\($0)", hours: $0, end: Int64($0) * 1000) })
            #expect(saved.count == 8)
            let shared = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "FastingLog", title: "Alice's fasts", publicPermission: READ_ONLY) { url } }
                """, token: alice)
            let url = try #require(shared.object["url"] as? String, "\(shared.body)")
            let zone = "{zoneName: \"FastingLog\", ownerName: \"\(harness.alice.userRecordName)\"}"
            let early = try await client.call("records", "{ records(scope: SHARED, zone: \(zone), recordType: \"Fast\") { records { recordName } } }", token: bob)
            #expect(early.code == "ZONE_NOT_FOUND")

            let accepted = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { role status } }", token: bob)
            #expect(accepted.object["role"] as? String == "PUBLIC_USER", "\(accepted.body)")
            let page = try await client.call("records", """
                query($a: JSON) { records(scope: SHARED, zone: \(zone), recordType: "Fast", filter: "endDate > %@ AND endDate <= %@", args: $a, sort: [{field: "endDate", direction: DESC}]) { records { recordName } } }
                """, ["a": [["type": "TIMESTAMP", "value": 2000], ["type": "TIMESTAMP", "value": 6000]]], token: bob)
            #expect((page.object["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["f6", "f5", "f4", "f3"], "\(page.body)")
            let write = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: \(zone), save: $s) { errors { code } } }
                """, ["s": [fast("mine", hours: 1, end: 1)]], token: bob)
            #expect((write.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "PERMISSION_FAILURE")

            _ = try await client.call("saveShare", "mutation { saveShare(zoneName: \"FastingLog\", publicPermission: NONE) { publicPermission } }", token: alice)
            let after = try await client.call("records", "{ records(scope: SHARED, zone: \(zone), recordType: \"Fast\") { records { recordName } } }", token: bob)
            #expect(after.code == "ZONE_NOT_FOUND")
        }
    }
}
