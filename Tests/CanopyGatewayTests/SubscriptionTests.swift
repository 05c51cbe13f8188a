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

/// What a WebSocket test has received, read with a timeout.
actor Inbox {
    struct Timeout: Error {}
    private var queue: [String] = []
    private var closed = false

    func push(_ text: String) {
        queue.append(text)
    }

    func close() { closed = true }

    /// The next message as a JSON object, or nil once the socket closed.
    /// The default wait is long because the full suite shares two cores:
    /// how fast a message comes is asserted apart (CANOPY_STRICT_LATENCY).
    nonisolated func next(within timeout: Duration = .seconds(20)) async throws -> [String: Any]? {
        guard let text = try await nextText(within: timeout) else { return nil }
        return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
    }

    func nextText(within timeout: Duration) async throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if !queue.isEmpty { return queue.removeFirst() }
            if closed { return nil }
            if ContinuousClock.now >= deadline { throw Timeout() }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// True when nothing arrives within `time`.
    func staysQuiet(for time: Duration) async throws -> Bool {
        try await Task.sleep(for: time)
        return queue.isEmpty
    }
}

extension TestClientProtocol {
    /// Opens `/graphql` as a graphql-transport-ws socket (token in the
    /// upgrade's Authorization header when given), runs `body` with what
    /// arrives and a way to send, and returns the server's close code.
    @discardableResult
    func subscriptionSocket(
        token: String?, _ body: @escaping @Sendable (Inbox, @Sendable (String) async throws -> Void) async throws -> Void
    ) async throws -> UInt16? {
        var headers: HTTPFields = [.secWebSocketProtocol: "graphql-transport-ws"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        let frame = try await ws("/graphql", configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers)) { inbound, outbound, _ in
            let inbox = Inbox()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { await inbox.push(text) }
                    }
                    await inbox.close()
                }
                try await body(inbox) { text in try await outbound.write(.text(text)) }
                try await outbound.close(.normalClosure, reason: nil)
                try await group.waitForAll()
            }
        }
        guard let frame else { return nil }
        switch frame.closeCode {
        case .unknown(let code): return code
        case .normalClosure: return 1000
        default: return 0
        }
    }
}

/// JSON text for a `subscribe` message.
func subscribeMessage(id: String, _ query: String, variables: [String: Any] = [:]) throws -> String {
    let object: [String: Any] = ["id": id, "type": "subscribe", "payload": ["query": query, "variables": variables]]
    return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
}

/// Live change notifications over WebSocket (`graphql-transport-ws`),
/// through a real socket to the gateway started in-process.
@Suite("Subscriptions over WebSocket")
struct SubscriptionTests {
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
                // 100 ms is checked when this test runs alone (make test runs it
                // again by itself with CANOPY_STRICT_LATENCY=1): in the parallel
                // run, two cores are shared with every other suite.
                let median = delays.sorted()[2]
                let bound = latencyBound(strict: .milliseconds(100), loaded: .seconds(5))
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
                #expect(code == "ZONE_NOT_FOUND")
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
            let noToken = try await client.subscriptionSocket(token: nil) { inbox, send in
                try await send("{\"type\":\"connection_init\",\"payload\":{}}")
                _ = try await inbox.next()
            }
            #expect(noToken == 4403)
            let badToken = try await client.subscriptionSocket(token: nil) { inbox, send in
                try await send("{\"type\":\"connection_init\",\"payload\":{\"Authorization\":\"Bearer cnp_0000000000000000_nope\"}}")
                _ = try await inbox.next()
            }
            #expect(badToken == 4403)
            let early = try await client.subscriptionSocket(token: harness.aliceToken) { inbox, send in
                try await send(try subscribeMessage(id: "1", Self.zoneChanged))
                _ = try await inbox.next()
            }
            #expect(early == 4401)
            let garbage = try await client.subscriptionSocket(token: harness.aliceToken) { inbox, send in
                try await send("not json")
                _ = try await inbox.next()
            }
            #expect(garbage == 4400)
            let reused = try await client.subscriptionSocket(token: nil) { inbox, send in
                // The token in connection_init's payload, as a browser sends it.
                try await send("{\"type\":\"connection_init\",\"payload\":{\"Authorization\":\"Bearer \(harness.aliceToken)\"}}")
                #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                try await send("{\"type\":\"ping\"}")
                #expect(try await inbox.next()?["type"] as? String == "pong")
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: harness.aliceToken)
                try await send(try subscribeMessage(id: "1", Self.zoneChanged))
                try await send(try subscribeMessage(id: "1", Self.zoneChanged))
                while try await inbox.next() != nil {}
            }
            #expect(reused == 4409)
        }
    }
}
