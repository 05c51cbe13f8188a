@testable import CanopyGatewayTestSupport
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
    static let delay = ReplicatedCluster.defaultDelay
    static let settings = ReplicatedCluster.settings

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
                    // Serving on the sockets' loops (the on-loop tier), replica
                    // reads go through each loop's own pool, as the primary's do.
                    let loopConnections = try await replicated.loopConnectionsOnReplica()
                    #expect(GatewayHarness.servingOnLoop ? loopConnections >= 1 : loopConnections == 0, "the replica's loop connections: \(loopConnections)")
                }
            }
        }
    }

    @Test("Web Services run through the same runner: records/modify's answer carries Canopy-Position, and records/lookup through another gateway, which reads the late replica, returns the write when sent it back (20 times in 20)")
    func webServicesReadYourWrites() async throws {
        try await ReplicatedCluster.with { replicated in
            let harness = replicated.harness, alice = harness.aliceToken
            let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
            let configuration = WebServicesFixture.configuration()
            try await harness.test(configuration: configuration, replicas: [replicated.replica], replicaSettings: Self.settings) { a, database in
                try await harness.test(configuration: configuration, replicas: [replicated.replica], replicaSettings: Self.settings) { b, other in
                    try await waitUntilInRotation(database)
                    try await waitUntilInRotation(other)
                    let made = try await a.webServices("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Log"}}}]}"#,
                                                       apiToken: apiToken, webAuthToken: alice)
                    #expect(made.status == .ok, "\(made.body)")
                    func lookup(_ client: some TestClientProtocol, position: String?) async throws -> Int? {
                        let found = try await client.webServices(
                            "private/records/lookup", #"{"zoneID": {"zoneName": "Log"}, "records": [{"recordName": "counter"}]}"#,
                            apiToken: apiToken, webAuthToken: alice, headers: position.map { [HTTPField.Name("Canopy-Position")!: $0] } ?? [:])
                        return ((found.records.first?["fields"] as? [String: Any])?["value"] as? [String: Any])?["value"] as? Int
                    }
                    var staleOnB = 0, freshWithHeader = 0
                    for i in 0..<20 {
                        let saved = try await a.webServices("private/records/modify", #"""
                            {"zoneID": {"zoneName": "Log"}, "operations": [{"operationType": "forceReplace",
                              "record": {"recordType": "Counter", "recordName": "counter", "fields": {"value": {"value": \#(i)}}}}]}
                            """#, apiToken: apiToken, webAuthToken: alice)
                        #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.body)")
                        let position = try #require(saved.headers[HTTPField.Name("Canopy-Position")!], "the write's answer says where it is: \(saved.headers)")
                        if try await lookup(b, position: nil) != i { staleOnB += 1 }
                        if try await lookup(b, position: position) == i { freshWithHeader += 1 }
                    }
                    #expect(staleOnB > 0, "a lookup through B right after a write through A found the write every time: is the replica delayed, and read?")
                    #expect(freshWithHeader == 20, "with Canopy-Position, B's records/lookup returned the write \(freshWithHeader) times in 20")
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
