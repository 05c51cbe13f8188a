import CanopyAdmin
import CanopyGateway
@testable import CanopyGatewayTestSupport
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import Testing

/// How soon a revoked token's open subscription is closed (docs/API.md
/// §10): within 5 s (the token cache's life) and a re-check's second. Run
/// alone in make test's latency step (docs/TESTING.md).
@Suite("Latency: a revoked token's socket")
struct RevocationLatencyTests {
    /// 5 s (the token cache's life) and a re-check's second.
    static let bound = Duration.milliseconds(5_800)

    @Test("an open subscription whose token is revoked is closed with 4403 within 5 s")
    func revokedOverWebSocket() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(live: true) { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: harness.bobToken)
            _ = try await save(client, token: harness.bobToken, [["recordName": "f1", "recordType": "Fast", "fields": ["hours": 16]]])
            let code = try await client.subscriptionSocket(token: harness.bobToken) { inbox, send in
                try await send("{\"type\":\"connection_init\"}")
                #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                try await send(try subscribeMessage(id: "feed", "subscription { zoneChanged(scope: PRIVATE, zone: {zoneName: \"Fasting\"}) { token } }"))
                #expect(try await inbox.next()?["type"] as? String == "next", "the first page")
                _ = try await TestDatabase.withConnection(harness.endpoint) { connection in
                    try await UserAdmin(logger: TestDatabase.logger).revoke(prefix: String(harness.bobToken.prefix(20)), connection: connection)
                }
                let revoked = ContinuousClock.now
                while try await inbox.next(within: .seconds(10)) != nil {}
                let took = ContinuousClock.now - revoked
                #expect(took < Self.bound, "closed after \(took)")
            }
            #expect(code == 4403)
        }
    }
}
