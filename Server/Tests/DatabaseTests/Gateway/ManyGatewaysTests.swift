@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import PostgresNIO
import Testing

/// Many gateways, one database (issue 19, part 1): two gateways, each with
/// its own pool and its own LISTEN connection, behave as one. Each runs on
/// the real Hummingbird stack with a socket of its own.
@Suite("Many gateways, one database")
struct ManyGatewaysTests {
    static let live = GatewayConfiguration(port: 0)

    @Test("a token revoked through gateway A is refused by gateway B within 5 s; a participant removed through A reads nothing through B at once")
    func revocationAndRemovalAcrossGateways() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { a in
            try await harness.test { b in
                let (_, carol) = try await addUser("carol", on: harness.endpoint)
                let token = carol.string
                #expect(try await b.call("me", "{ me { name } }", token: token).code == nil, "B has the token cached now")
                let revoked = try await a.call("revokeToken", "mutation($p: String!) { revokeToken(prefix: $p) }", ["p": String(token.prefix(20))], token: token)
                let revokedAt = ContinuousClock.now
                #expect(revoked.data as? Bool == true, "\(revoked.body)")
                let late = try await b.answerFiveSeconds(after: revokedAt, token: token)
                #expect(late.code == "NOT_AUTHENTICATED", "B still accepted, 5 s on, the token revoked through A: \(late.body)")

                // Removal: no cache stands between row-level security and the next request.
                let alice = harness.aliceToken, bob = harness.bobToken
                _ = try await a.call("saveZone", "mutation { saveZone(zoneName: \"Team\") { zoneName } }", token: alice)
                _ = try await save(a, token: alice, zone: "Team", [["recordName": "note", "recordType": "Note", "fields": ["text": "hi"]]])
                let share = try await a.call("saveShare", "mutation($bob: String) { saveShare(zoneName: \"Team\", participants: [{userRecordName: $bob, permission: READ_ONLY}]) { url } }",
                                             ["bob": harness.bob.userRecordName], token: alice)
                let url = try #require(share.object["url"] as? String)
                _ = try await b.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }", ["u": url], token: bob)
                let (before, _) = try await b.zoneChanges("Team", scope: "SHARED", owner: harness.alice.userRecordName, since: nil, token: bob)
                #expect(before?.changed == ["note"])
                _ = try await a.call("removeParticipant", "mutation($bob: String) { removeParticipant(zoneName: \"Team\", userRecordName: $bob) { url } }",
                                     ["bob": harness.bob.userRecordName], token: alice)
                let (after, answer) = try await b.zoneChanges("Team", scope: "SHARED", owner: harness.alice.userRecordName, since: nil, token: bob)
                #expect(after == nil && answer.code == "ZONE_NOT_FOUND", "\(answer.body)")
            }
        }
    }

    @Test("of gateways asking at once, one claims the change-history purge; the next claim comes an interval later")
    func purgeClaimedOnce() async throws {
        let harness = try await GatewayHarness.make()
        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        func claims(_ count: Int) async throws -> [Bool] {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        try await TestDatabase.withConnection(gateway) { connection in
                            let rows = try await connection.query("SELECT canopy.claim_history_purge(interval '1 hour')", logger: TestDatabase.logger)
                            for try await claimed in rows.decode(Bool.self) { return claimed }
                            return false
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(try await claims(8).filter { $0 }.count == 1, "eight gateways at once: one purges")
        #expect(try await claims(4).filter { $0 }.count == 0, "within the interval nobody purges again")
        // An interval later (the claim moved back by the owner), one claims again.
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.query("UPDATE canopy.feed_state SET history_purge_claimed_at = now() - interval '1 hour'", logger: TestDatabase.logger)
        }
        #expect(try await claims(8).filter { $0 }.count == 1)
        // The gateway's role cannot move the claim itself.
        await #expect(throws: (any Error).self) {
            try await TestDatabase.withConnection(gateway) { connection in
                try await connection.query("UPDATE canopy.feed_state SET history_purge_claimed_at = NULL", logger: TestDatabase.logger)
            }
        }
    }
}
