import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Testing

/// Read replicas (issue 19, part 2): a primary and a streaming replica made
/// by `canopy cluster replica`, the replica's replay held back with
/// `recovery_min_apply_delay`, and gateways built as `canopy serve --replica-url`
/// builds them. A client that wrote never reads older data than its write.
@Suite("Read replicas: read-your-writes")
struct ReplicaReadTests {
    /// Replay this late: long enough that a read right after a write would
    /// find the replica without it, short enough to wait out.
    static let delay = Duration.milliseconds(800)
    static let settings = ReplicaSet.Settings(wait: .milliseconds(20), maximumLag: .seconds(5), pollInterval: .milliseconds(100))

    @Test("a write then an immediate read returns it 1,000 times in 1,000 while the replica replays 0.8 s late; another gateway reads the replica, and returns the write when sent Canopy-Position")
    func readYourWrites() async throws {
        try await ReplicatedCluster.with { replicated in
            let harness = replicated.harness, alice = harness.aliceToken
            try await harness.test(replicas: [replicated.replica], replicaSettings: Self.settings) { a, database in
                try await waitUntilInRotation(database)
                _ = try await a.call("saveZone", "mutation { saveZone(zoneName: \"Log\") { zoneName } }", token: alice)
                var stale: [String] = []
                for i in 0..<1000 {
                    _ = try await saveCounter(a, i, token: alice)
                    // Half by lookup, half by a query: both may read replicas.
                    let seen = i % 2 == 0 ? try await lookupCounter(a, token: alice) : try await queryCounter(a, token: alice)
                    if seen.value != i { stale.append("write \(i), read \(String(describing: seen.value))") }
                }
                #expect(stale.count == 0, "reads went back in time: \(stale.prefix(5))")

                // Gateway B never saw Alice write: it reads the replica,
                // which has not replayed her write yet...
                try await harness.test(replicas: [replicated.replica], replicaSettings: Self.settings) { b, other in
                    try await waitUntilInRotation(other)
                    let scansBefore = try await replicated.recordScansOnReplica()
                    var staleOnB = 0, freshWithHeader = 0
                    for i in 1000..<1020 {
                        let position = try await saveCounter(a, i, token: alice)
                        if try await lookupCounter(b, token: alice).value != i { staleOnB += 1 }
                        // ...unless the client sends back what A told it.
                        if try await lookupCounter(b, token: alice, position: position).value == i { freshWithHeader += 1 }
                    }
                    #expect(staleOnB > 0, "a read through B right after a write through A found the write every time: is the replica delayed, and read?")
                    #expect(freshWithHeader == 20, "with Canopy-Position, B returned the write \(freshWithHeader) times in 20")
                    // The reads without the header ran on the replica: its own
                    // statistics count scans of canopy.records there.
                    let scans = try await replicated.recordScansOnReplica(atLeast: scansBefore + Int64(staleOnB))
                    #expect(scans - scansBefore >= Int64(staleOnB), "pg_stat_user_tables on the replica: \(scans - scansBefore) scans of canopy.records")
                }
            }
        }
    }

    @Test("change tokens carry their position: a database feed continued through a gateway that reads a late replica does not report a zone twice")
    func tokensCarryTheirPosition() async throws {
        try await ReplicatedCluster.with { replicated in
            let harness = replicated.harness, alice = harness.aliceToken
            try await harness.test(replicas: [replicated.replica], replicaSettings: Self.settings) { a, database in
                try await harness.test(replicas: [replicated.replica], replicaSettings: Self.settings) { b, other in
                    try await waitUntilInRotation(database)
                    try await waitUntilInRotation(other)
                    _ = try await a.call("saveZone", "mutation { saveZone(zoneName: \"Trip\") { zoneName } }", token: alice)
                    let first = try await a.databaseChanges(scope: "PRIVATE", since: nil, token: alice)
                    #expect(first.changed.contains("Trip"), "\(first.answer.body)")
                    // B has no memory of Alice's write and no header: only the token says where she is.
                    let second = try await b.databaseChanges(scope: "PRIVATE", since: first.token, token: alice)
                    #expect(second.changed.isEmpty, "\(second.answer.body)")
                    try await Task.sleep(for: Self.delay * 2)
                    let third = try await b.databaseChanges(scope: "PRIVATE", since: second.token, token: alice)
                    #expect(third.changed.isEmpty, "the zone came again after the replica caught up: \(third.changed)")
                    // A zone feed's token too: the page after it shows the write it followed.
                    _ = try await saveCounter(a, 1, zone: "Trip", token: alice)
                    let (page, _) = try await a.zoneChanges("Trip", since: nil, token: alice)
                    let token = try #require(page?.token)
                    let position = try await saveCounter(a, 2, zone: "Trip", name: "second", token: alice)
                    #expect(position != nil, "a write's answer carries Canopy-Position")
                    let (next, _) = try await b.zoneChanges("Trip", since: token, token: alice, position: position)
                    #expect(next?.changed == ["second"], "\(String(describing: next))")
                }
            }
        }
    }

    @Test("a subscriber on a gateway that reads a late replica is told of a commit made through another gateway")
    func subscriptionsSeeTheirCommit() async throws {
        try await ReplicatedCluster.with { replicated in
            let harness = replicated.harness, alice = harness.aliceToken
            let live = GatewayConfiguration(port: 0)
            try await harness.test(configuration: live, live: true, replicas: [replicated.replica], replicaSettings: Self.settings) { a, database in
                try await harness.test(configuration: live, live: true, replicas: [replicated.replica], replicaSettings: Self.settings) { b, other in
                    try await waitUntilInRotation(database)
                    try await waitUntilInRotation(other)
                    _ = try await b.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: alice)
                    try await Task.sleep(for: Self.delay * 2)
                    try await a.subscriptionSocket(token: alice) { inbox, send in
                        try await send("{\"type\":\"connection_init\"}")
                        #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                        try await send(try subscribeMessage(id: "feed", SubscriptionTests.zoneChanged))
                        // The first page (from null) is empty: nothing saved yet.
                        _ = try await save(b, token: alice, [fast("through-b", hours: 1, end: 1)])
                        let committed = ContinuousClock.now
                        let message = try #require(try await inbox.next(within: .seconds(10)), "not told within 10 s")
                        let told = ContinuousClock.now - committed
                        let payload = ((message["payload"] as? [String: Any])?["data"] as? [String: Any])?["zoneChanged"] as? [String: Any]
                        #expect((payload?["changed"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["through-b"], "\(message)")
                        // Told before the replica's 5 s lag bound lapses when run alone; the
                        // parallel run is loose (latencyBound).
                        #expect(told < latencyBound(strict: .seconds(2), loaded: .seconds(8)), "told \(told) after the commit through the other gateway")
                        try await send("{\"id\":\"feed\",\"type\":\"complete\"}")
                    }
                }
            }
        }
    }

    @Test("a replica that falls behind leaves rotation and comes back when it catches up; reads on a replica that drops its connections or stops are answered by the primary; RLS holds on the replica")
    func rotation() async throws {
        try await ReplicatedCluster.with(delay: nil) { replicated in
            let harness = replicated.harness, alice = harness.aliceToken, bob = harness.bobToken
            let settings = ReplicaSet.Settings(wait: .milliseconds(20), maximumLag: .seconds(1), pollInterval: .milliseconds(100))
            try await harness.test(replicas: [replicated.replica], replicaSettings: settings) { a, database in
                try await waitUntilInRotation(database)
                _ = try await a.call("saveZone", "mutation { saveZone(zoneName: \"Log\") { zoneName } }", token: alice)
                _ = try await saveCounter(a, 1, token: alice)
                // Row-level security on the replica: Bob, who never wrote here, reads the replica.
                let bobsView = try await a.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Log\"}, recordNames: [\"counter\"]) { record { recordName } } }", token: bob)
                #expect(bobsView.code == "ZONE_NOT_FOUND", "\(bobsView.body)")
                let bobsShared = try await a.call("records", """
                    { records(scope: SHARED, zone: {zoneName: "Log", ownerName: "\(harness.alice.userRecordName)"}, recordType: "Counter") { records { recordName } } }
                    """, token: bob)
                #expect(bobsShared.code == "ZONE_NOT_FOUND", "\(bobsShared.body)")

                // Replay paused while the primary writes: out of rotation.
                try await replicated.onReplica("SELECT pg_wal_replay_pause()")
                let replica = try #require(database.replicas?.replicas.first)
                var out = false
                for i in 2..<100 where !out {
                    _ = try await saveCounter(a, i, token: alice)
                    try await Task.sleep(for: .milliseconds(100))
                    out = !replica.isInRotation
                }
                #expect(out, "a replica paused for 10 s stayed in rotation")
                try await replicated.onReplica("SELECT pg_wal_replay_resume()")
                try await waitUntilInRotation(database)

                // Its connections dropped: the read is answered all the same.
                try await replicated.onReplica("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'canopy_gateway'")
                let afterDrop = try await a.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Log\"}, recordNames: [\"counter\"]) { record { recordName } } }", token: bob)
                #expect(afterDrop.code == "ZONE_NOT_FOUND", "\(afterDrop.body)")
                let aliceAfterDrop = try await lookupCounter(a, token: alice)
                #expect(aliceAfterDrop.value != nil, "\(aliceAfterDrop)")

                // Stopped: out of rotation, and every read still answered.
                try await replicated.cluster.replica(named: "r1").stop(logger: TestDatabase.logger)
                for i in 200..<210 {
                    _ = try await saveCounter(a, i, token: alice)
                    #expect(try await lookupCounter(a, token: alice).value == i)
                    try await Task.sleep(for: .milliseconds(50))
                }
                // The next samples find it gone (each waits a second at most).
                for _ in 0..<50 where replica.isInRotation { try await Task.sleep(for: .milliseconds(100)) }
                #expect(!replica.isInRotation, "a stopped replica is out of rotation within 5 s")
            }
        }
    }
}

/// Waits (10 s at most) for the gateway's replicas to be in rotation.
func waitUntilInRotation(_ database: RequestDatabase) async throws {
    let replicas = try #require(database.replicas?.replicas)
    for _ in 0..<200 {
        if replicas.allSatisfy(\.isInRotation) { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("the replicas did not come into rotation within 10 s")
}

/// Saves the record `counter` (type Counter) with `value`, over what is
/// there; returns the `Canopy-Position` of the answer.
@discardableResult
func saveCounter(_ client: any TestClientProtocol, _ value: Int, zone: String = "Log", name: String = "counter", token: String) async throws -> String? {
    let (answer, headers) = try await client.callWithHeaders("modifyRecords", """
        mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "\(zone)"}, save: $s, savePolicy: ALL_KEYS) {
          saved { recordName } errors { recordName code message } } }
        """, ["s": [["recordName": name, "recordType": "Counter", "fields": ["value": value]]]], token: token)
    #expect((answer.object["saved"] as? [[String: Any]])?.count == 1, "\(answer.body)")
    return headers[HTTPField.Name("Canopy-Position")!]
}

/// The counter's value by `lookup`, and the Canopy-Position of the answer.
func lookupCounter(_ client: any TestClientProtocol, token: String, position: String? = nil) async throws -> (value: Int?, position: String?) {
    let (answer, headers) = try await client.callWithHeaders("lookup", """
        { lookup(scope: PRIVATE, zone: {zoneName: "Log"}, recordNames: ["counter"]) { record { fields } } }
        """, token: token, position: position)
    let fields = (answer.list.first?["record"] as? [String: Any])?["fields"] as? [String: Any]
    return (fields?["value"] as? Int, headers[HTTPField.Name("Canopy-Position")!])
}

/// The counter's value by a `records` query.
func queryCounter(_ client: any TestClientProtocol, token: String) async throws -> (value: Int?, position: String?) {
    let (answer, headers) = try await client.callWithHeaders("records", """
        { records(scope: PRIVATE, zone: {zoneName: "Log"}, recordType: "Counter") { records { recordName fields } } }
        """, token: token)
    let records = answer.object["records"] as? [[String: Any]] ?? []
    let fields = records.first { $0["recordName"] as? String == "counter" }?["fields"] as? [String: Any]
    return (fields?["value"] as? Int, headers[HTTPField.Name("Canopy-Position")!])
}


/// An embedded cluster of the test's own with a streaming replica `r1`
/// whose replay is held back, two users, and their tokens.
struct ReplicatedCluster: Sendable {
    let cluster: EmbeddedCluster
    let harness: GatewayHarness
    /// The replica as the gateway's role.
    let replica: DatabaseEndpoint
    let replicaAdmin: DatabaseEndpoint

    static func with(delay: Duration? = ReplicaReadTests.delay, _ body: @Sendable (ReplicatedCluster) async throws -> Void) async throws {
        let directory = "/tmp/canopy-replica-reads-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let cluster = EmbeddedCluster(dataDirectory: directory)
        do {
            let primary = try await cluster.start(logger: TestDatabase.logger)
            try await TestDatabase.withConnection(primary.adminEndpoint) { connection in
                try await Migrator(directory: TestDatabase.migrationsDirectory, logger: TestDatabase.logger).up(connection: connection)
            }
            let (alice, aliceToken) = try await addUser("alice", on: primary.adminEndpoint)
            let (bob, bobToken) = try await addUser("bob", on: primary.adminEndpoint)
            let running = try await cluster.startReplica(named: "r1", logger: TestDatabase.logger)
            let replicated = ReplicatedCluster(
                cluster: cluster,
                harness: GatewayHarness(endpoint: primary.adminEndpoint, alice: alice, aliceToken: aliceToken.string, bob: bob, bobToken: bobToken.string),
                replica: running.adminEndpoint.asUser("canopy_gateway", password: nil),
                replicaAdmin: running.adminEndpoint
            )
            if let delay {
                let milliseconds = delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
                try await replicated.onReplica("ALTER SYSTEM SET recovery_min_apply_delay = '\(milliseconds)ms'")
                try await replicated.onReplica("SELECT pg_reload_conf()")
            }
            try await body(replicated)
        } catch {
            try? await cluster.stop(logger: TestDatabase.logger)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        try? await cluster.stop(logger: TestDatabase.logger)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs one statement on the replica as its administrator.
    func onReplica(_ sql: String) async throws {
        try await TestDatabase.withConnection(replicaAdmin) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
        }
    }

    /// Scans of `canopy.records` on the replica (its own pg_stat_user_tables:
    /// statistics are kept per server), waiting (15 s at most) until at
    /// least `atLeast`: backends report their counts about once a second.
    func recordScansOnReplica(atLeast: Int64 = 0) async throws -> Int64 {
        var count: Int64 = 0
        for _ in 0..<150 {
            count = try await TestDatabase.withConnection(replicaAdmin) { connection in
                let rows = try await connection.query(
                    "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relid = 'canopy.records'::regclass",
                    logger: TestDatabase.logger
                )
                for try await value in rows.decode(Int64.self) { return value }
                return 0
            }
            if count >= atLeast { return count }
            try await Task.sleep(for: .milliseconds(100))
        }
        return count
    }
}
