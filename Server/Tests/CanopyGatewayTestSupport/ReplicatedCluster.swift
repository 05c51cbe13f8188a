import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Testing

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
    /// Replay this late: long enough that a read right after a write would
    /// find the replica without it, short enough to wait out.
    static let defaultDelay = Duration.milliseconds(800)
    /// The replica set's settings the replica tests give their gateways.
    static let settings = ReplicaSet.Settings(wait: .milliseconds(20), maximumLag: .seconds(5), pollInterval: .milliseconds(100))

    let cluster: EmbeddedCluster
    let harness: GatewayHarness
    /// The replica as the gateway's role.
    let replica: DatabaseEndpoint
    let replicaAdmin: DatabaseEndpoint

    static func with(delay: Duration? = ReplicatedCluster.defaultDelay, _ body: @Sendable (ReplicatedCluster) async throws -> Void) async throws {
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
    /// The replica's connections a gateway serving on its loops opened for
    /// its loops (`application_name` `canopy loop N`, issue 69).
    func loopConnectionsOnReplica() async throws -> Int {
        try await TestDatabase.withConnection(replicaAdmin) { connection in
            let rows = try await connection.query(
                "SELECT count(*)::int8 FROM pg_stat_activity WHERE application_name LIKE 'canopy loop %'", logger: TestDatabase.logger
            )
            for try await value in rows.decode(Int64.self) { return Int(value) }
            return 0
        }
    }

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
