@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import HummingbirdWSTesting
import Testing

/// Live change notifications over WebSocket (`graphql-transport-ws`),
/// through a real socket to the gateway started in-process.
@Suite("Subscriptions over WebSocket")
struct SubscriptionTests {
    static let zoneChanged = "subscription($since: String) { zoneChanged(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, since: $since) { changed { recordName } deleted { recordName } token } }"

    @Test("a stranger's subscription to someone else's zone is refused, and a stranger is never told of its commits")
    func strangerRefused() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(live: true) { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
            let owner = harness.alice.userRecordName
            try await client.subscriptionSocket(token: bob) { inbox, send in
                try await send("{\"type\":\"connection_init\"}")
                #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                try await send(try subscribeMessage(id: "spy", """
                    subscription { zoneChanged(scope: SHARED, zone: {zoneName: "Fasting", ownerName: "\(owner)"}) { changed { recordName } token } }
                    """))
                let refused = try #require(try await inbox.next())
                #expect(refused["type"] as? String == "error" && refused["id"] as? String == "spy", "\(refused)")
                let code = ((refused["payload"] as? [[String: Any]])?.first?["extensions"] as? [String: Any])?["code"] as? String
                // A wrong code prints what the database said (once on Citus under load:
                // INVALID_ARGUMENTS, docs/TESTING.md "Under load").
                #expect(code == "ZONE_NOT_FOUND", "\(refused)\n\(harness.logs.text.split(separator: "\n").filter { $0.contains("sqlstate") }.joined(separator: "\n"))")
                // His own (absent) zone of that name is refused the same way.
                try await send(try subscribeMessage(id: "own", Self.zoneChanged))
                #expect(try await inbox.next()?["type"] as? String == "error")
                // A database subscription of his sees none of alice's commits.
                try await send(try subscribeMessage(id: "db", "subscription { databaseChanged(scope: SHARED) { changedZones { zoneName } deletedZones { zoneName } token } }"))
                _ = try await save(client, token: alice, [fast("secret", hours: 1, end: 1)])
                #expect(try await inbox.staysQuiet(for: .milliseconds(500)), "bob is told nothing of alice's zone")

                // Once alice shares the zone with him and he accepts, he is told.
                let share = try await client.call("saveShare", """
                    mutation { saveShare(zoneName: "Fasting", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_ONLY}]) { url } }
                    """, token: alice)
                let url = try #require(share.object["url"] as? String)
                #expect(try await inbox.staysQuiet(for: .milliseconds(300)), "an invitation is not access")
                _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: bob)
                let joined = try #require(try await inbox.next())
                let zones = (((joined["payload"] as? [String: Any])?["data"] as? [String: Any])?["databaseChanged"] as? [String: Any])?["changedZones"] as? [[String: Any]]
                #expect(zones?.compactMap { $0["zoneName"] as? String } == ["Fasting"], "\(joined)")
                _ = try await client.call("removeParticipant", """
                    mutation { removeParticipant(zoneName: "Fasting", userRecordName: "\(harness.bob.userRecordName)") { url } }
                    """, token: alice)
                let left = try #require(try await inbox.next())
                let gone = (((left["payload"] as? [String: Any])?["data"] as? [String: Any])?["databaseChanged"] as? [String: Any])?["deletedZones"] as? [[String: Any]]
                #expect(gone?.compactMap { $0["zoneName"] as? String } == ["Fasting"], "\(left)")
            }
        }
    }

    @Test("databaseChanged(PRIVATE) is told when its owner creates a zone")
    func zoneCreationIsPushed() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(live: true) { client in
            let alice = harness.aliceToken
            let startToken = try await client.databaseChanges(scope: "PRIVATE", since: nil, token: alice).token
            try await client.subscriptionSocket(token: alice) { inbox, send in
                try await send("{\"type\":\"connection_init\"}")
                #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                try await send(try subscribeMessage(id: "db", "subscription($s: String) { databaseChanged(scope: PRIVATE, since: $s) { changedZones { zoneName } token } }", variables: ["s": startToken]))
                #expect(try await inbox.staysQuiet(for: .milliseconds(200)))
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fresh\") { zoneName } }", token: alice)
                let message = try #require(try await inbox.next())
                let zones = (((message["payload"] as? [String: Any])?["data"] as? [String: Any])?["databaseChanged"] as? [String: Any])?["changedZones"] as? [[String: Any]]
                #expect(zones?.compactMap { $0["zoneName"] as? String } == ["Fresh"], "\(message)")
            }
        }
    }

    @Test("the protocol's refusals: no or a bad token is 4403, subscribing before connection_init is 4401, garbage is 4400, a reused id is 4409")
    func protocolRefusals() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(live: true) { client in
            let noToken = try await Self.named("no token") { try await client.subscriptionSocket(token: nil) { inbox, send in
                try await send("{\"type\":\"connection_init\",\"payload\":{}}")
                _ = try await inbox.next()
            } }
            #expect(noToken == 4403)
            let badToken = try await Self.named("a bad token") { try await client.subscriptionSocket(token: nil) { inbox, send in
                try await send("{\"type\":\"connection_init\",\"payload\":{\"Authorization\":\"Bearer cnp_0000000000000000_nope\"}}")
                _ = try await inbox.next()
            } }
            #expect(badToken == 4403)
            let early = try await Self.named("subscribing before connection_init") { try await client.subscriptionSocket(token: harness.aliceToken) { inbox, send in
                try await send(try subscribeMessage(id: "1", Self.zoneChanged))
                _ = try await inbox.next()
            } }
            #expect(early == 4401)
            let garbage = try await Self.named("garbage") { try await client.subscriptionSocket(token: harness.aliceToken) { inbox, send in
                try await send("not json")
                _ = try await inbox.next()
            } }
            #expect(garbage == 4400)
            let reused = try await Self.named("a reused id") { try await client.subscriptionSocket(token: nil) { inbox, send in
                // The token in connection_init's payload, as a browser sends it.
                try await send("{\"type\":\"connection_init\",\"payload\":{\"Authorization\":\"Bearer \(harness.aliceToken)\"}}")
                #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                try await send("{\"type\":\"ping\"}")
                #expect(try await inbox.next()?["type"] as? String == "pong")
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: harness.aliceToken)
                try await send(try subscribeMessage(id: "1", Self.zoneChanged))
                try await send(try subscribeMessage(id: "1", Self.zoneChanged))
                while try await inbox.next() != nil {}
            } }
            #expect(reused == 4409)
        }
    }

    @Test("a socket that sends no connection_init within --websocket-init-timeout is closed with 4408")
    func initialisationDeadline() async throws {
        let harness = try await GatewayHarness.make()
        var configuration = GatewayConfiguration()
        configuration.limits.webSocketInitialisationTimeout = .seconds(1)
        // Only the wait under test: the first head's deadline stays lifted.
        configuration.limits.requestHeadTimeout = .seconds(600)
        try await harness.test(configuration: configuration, live: true, connectionDeadlines: true) { client in
            let silent = try await client.subscriptionSocket(token: harness.aliceToken) { inbox, _ in
                let message = try await inbox.next()
                #expect(message == nil, "the server sent a message to a socket that never initialised: \(message ?? [:])")
            }
            #expect(silent == 4408)
        }
    }

    /// Runs one socket of a test, naming it and its time in a failure
    /// (the refusals test failed under heavy load with only "I/O on closed
    /// channel": docs/TESTING.md, "Known to fail under heavy load").
    static func named<T: Sendable>(_ what: String, _ body: () async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        do {
            return try await body()
        } catch {
            Issue.record("the socket for \(what) failed after \(ContinuousClock.now - started): \(error)")
            throw error
        }
    }
}
