import CanopyGateway
import CanopyPush
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import PostgresNIO
import Testing

/// What push tests share (the stories' `PushTests`, the database tier's
/// outbound and access-request suites): fast deliverer settings, a gateway
/// configuration whose receivers may be on loopback, webhooks and
/// subscriptions made over GraphQL, and waiting until all is delivered.
enum PushFixture {
    /// Fast enough for tests: polls every 200 ms, retries after 300 ms.
    static var settings: PushSettings {
        var settings = PushSettings()
        settings.pollInterval = .milliseconds(200)
        settings.firstRetry = .milliseconds(300)
        settings.maximumRetry = .seconds(2)
        return settings
    }

    /// Loopback allowed, where the receivers listen; hooks.example.com
    /// stands for a public host (never connected to).
    static func configuration(_ settings: PushSettings = PushFixture.settings) -> GatewayConfiguration {
        GatewayConfiguration(push: settings, outbound: .loopbackForTests(resolver: FixedHostResolver(["hooks.example.com": ["93.184.215.14"]])))
    }


    static func registerWebhook(_ client: any TestClientProtocol, url: String, token: String) async throws -> String {
        let answer = try await client.call("registerDevice", "mutation { registerDevice(kind: WEBHOOK, url: \"\(url)\") { deviceID signingSecret } }", token: token)
        return try #require(answer.object["signingSecret"] as? String, "\(answer.body)")
    }

    static func subscribe(_ client: any TestClientProtocol, _ id: String, kind: String, scope: String = "PRIVATE", token: String) async throws {
        let answer = try await client.call("saveSubscription", "mutation { saveSubscription(subscriptionID: \"\(id)\", kind: \(kind), scope: \(scope)) { subscriptionID } }", token: token)
        #expect(answer.object["subscriptionID"] as? String == id, "\(answer.body)")
    }

    /// Notifications not yet accepted by their push service, and changes not yet fanned out.
    /// Waits until nothing is left to fan out or send (and `also` holds),
    /// then a little longer: what a test then counts is all there will be.
    /// An outbox row stays until its deliveries are queued, and a delivery
    /// until the service accepted it, so an empty backlog means settled.
    static func drained(_ harness: GatewayHarness, also: @Sendable () async -> Bool = { true }) async -> Bool {
        let settled = await eventually(timeout: .seconds(60)) {
            guard (try? await pending(harness)) == 0 else { return false }
            return await also()
        }
        try? await Task.sleep(for: .milliseconds(300))
        return settled
    }

    static func pending(_ harness: GatewayHarness) async throws -> Int {
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            let rows = try await connection.query("SELECT outbox + pending FROM canopy.push_backlog()", logger: TestDatabase.logger).collect()
            return Int(try rows.first?.decode(Int64.self) ?? -1)
        }
    }
}
