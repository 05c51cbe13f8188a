import CanopyAdmin
import CanopyGateway
@testable import CanopyGatewayTestSupport
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import Testing

/// How soon a subscriber is told of a commit (docs/API.md §7): 100 ms on
/// one gateway, 2 s across gateways (LISTEN/NOTIFY) and through a gateway
/// that reads a late replica. The functional tiers check that it is told;
/// these check how soon, run alone in make test's latency step
/// (docs/TESTING.md).
@Suite("Latency: notifications")
struct NotificationLatencyTests {
    static let zoneChanged = "subscription($since: String) { zoneChanged(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, since: $since) { changed { recordName } deleted { recordName } token } }"

    @Test("a subscriber is told of each commit within 100 ms (median of five), with the changes and a token that continues the feed")
    func toldAtOnce() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(live: true) { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, [fast("before", hours: 1, end: 1)])
            let (start, _) = try await client.zoneChanges("Fasting", since: nil, token: alice)
            let since = try #require(start?.token)
            let close = try await client.subscriptionSocket(token: alice) { inbox, send in
                try await send("{\"type\":\"connection_init\"}")
                #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                try await send(try subscribeMessage(id: "feed", Self.zoneChanged, variables: ["since": since]))
                #expect(try await inbox.staysQuiet(for: .milliseconds(300)), "nothing changed since the token: nothing is sent")
                var delays: [Duration] = []
                var lastToken: String?
                for index in 1...5 {
                    _ = try await save(client, token: alice, [fast("r\(index)", hours: index, end: Int64(index))])
                    let committed = ContinuousClock.now
                    let message = try #require(try await inbox.next(within: .seconds(20)))
                    delays.append(ContinuousClock.now - committed)
                    #expect(message["type"] as? String == "next" && message["id"] as? String == "feed", "\(message)")
                    let payload = ((message["payload"] as? [String: Any])?["data"] as? [String: Any])?["zoneChanged"] as? [String: Any]
                    #expect((payload?["changed"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["r\(index)"], "\(message)")
                    lastToken = payload?["token"] as? String
                }
                let median = delays.sorted()[2]
                let bound = Duration.milliseconds(100)
                #expect(median < bound, "told \(delays) after the commit")
                // The pushed token continues the feed over HTTP: nothing more since.
                let (after, _) = try await client.zoneChanges("Fasting", since: lastToken, token: alice)
                #expect(after?.changed == [] && after?.deleted == [])
                try await send("{\"id\":\"feed\",\"type\":\"complete\"}")
                _ = try await save(client, token: alice, [fast("late", hours: 9, end: 9)])
                #expect(try await inbox.staysQuiet(for: .milliseconds(300)), "a completed subscription sends nothing more")
            }
            #expect(close == 1000)
        }
    }

    @Test("a subscriber on gateway A is told of a commit made through gateway B")
    func subscriptionAcrossGateways() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(configuration: GatewayConfiguration(port: 0), live: true) { a in
            try await harness.test(configuration: GatewayConfiguration(port: 0), live: true) { b in
                let alice = harness.aliceToken
                _ = try await b.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
                let (start, _) = try await a.zoneChanges("Fasting", since: nil, token: alice)
                let since = try #require(start?.token)
                try await a.subscriptionSocket(token: alice) { inbox, send in
                    try await send("{\"type\":\"connection_init\"}")
                    #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                    try await send(try subscribeMessage(id: "feed", Self.zoneChanged, variables: ["since": since]))
                    _ = try await save(b, token: alice, [fast("through-b", hours: 1, end: 1)])
                    let committed = ContinuousClock.now
                    let message = try #require(try await inbox.next(within: .seconds(10)))
                    let told = ContinuousClock.now - committed
                    let payload = ((message["payload"] as? [String: Any])?["data"] as? [String: Any])?["zoneChanged"] as? [String: Any]
                    #expect((payload?["changed"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["through-b"], "\(message)")
                    // 2 s across gateways (LISTEN/NOTIFY), run alone.
                    #expect(told < .seconds(2), "told \(told) after the commit through the other gateway")
                    try await send("{\"id\":\"feed\",\"type\":\"complete\"}")
                }
            }
        }
    }

    @Test("a subscriber on a gateway that reads a late replica is told of a commit made through another gateway")
    func subscriptionsSeeTheirCommit() async throws {
        try await ReplicatedCluster.with { replicated in
            let harness = replicated.harness, alice = harness.aliceToken
            let live = GatewayConfiguration(port: 0)
            try await harness.test(configuration: live, live: true, replicas: [replicated.replica], replicaSettings: ReplicatedCluster.settings) { a, database in
                try await harness.test(configuration: live, live: true, replicas: [replicated.replica], replicaSettings: ReplicatedCluster.settings) { b, other in
                    try await waitUntilInRotation(database)
                    try await waitUntilInRotation(other)
                    _ = try await b.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
                    try await Task.sleep(for: ReplicatedCluster.defaultDelay * 2)
                    try await a.subscriptionSocket(token: alice) { inbox, send in
                        try await send("{\"type\":\"connection_init\"}")
                        #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                        try await send(try subscribeMessage(id: "feed", Self.zoneChanged))
                        // The first page (from null) is empty: nothing saved yet.
                        _ = try await save(b, token: alice, [fast("through-b", hours: 1, end: 1)])
                        let committed = ContinuousClock.now
                        let message = try #require(try await inbox.next(within: .seconds(10)), "not told within 10 s")
                        let told = ContinuousClock.now - committed
                        let payload = ((message["payload"] as? [String: Any])?["data"] as? [String: Any])?["zoneChanged"] as? [String: Any]
                        #expect((payload?["changed"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["through-b"], "\(message)")
                        // Told well before the replica's 5 s lag bound lapses.
                        #expect(told < .seconds(2), "told \(told) after the commit through the other gateway")
                        try await send("{\"id\":\"feed\",\"type\":\"complete\"}")
                    }
                }
            }
        }
    }
}
