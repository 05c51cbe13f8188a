@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// A streaming replica of the embedded cluster (issue 19, part 3): made
/// with pg_basebackup, it streams the primary's writes, and row-level
/// security decides on it exactly as on the primary (it is the same
/// database, policies and all).
@Suite("Embedded cluster: streaming replica")
struct ReplicaTests {
    @Test("a replica made by `cluster replica` streams the primary's commits, refuses writes, and shows each user what RLS shows on the primary")
    func replicaStreamsAndKeepsRLS() async throws {
        let directory = "/tmp/canopy-replica-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let cluster = EmbeddedCluster(dataDirectory: directory)
        defer {
            let stop = Task { try? await cluster.stop(logger: TestDatabase.logger) }
            _ = stop
        }
        let primary = try await cluster.start(logger: TestDatabase.logger)
        try await TestDatabase.withConnection(primary.adminEndpoint) { connection in
            try await Migrator(directory: TestDatabase.migrationsDirectory, logger: TestDatabase.logger).up(connection: connection)
        }
        let (alice, _) = try await addUser("alice", on: primary.adminEndpoint)
        let (bob, _) = try await addUser("bob", on: primary.adminEndpoint)
        // Alice's zone and record, committed through the gateway's role as her.
        try await TestDatabase.withConnection(primary.adminEndpoint.asUser("canopy_gateway", password: nil)) { connection in
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            try await connection.query("SELECT set_config('canopy.user_id', \(String(alice.id)), true)", logger: TestDatabase.logger)
            try await connection.query("INSERT INTO canopy.zones (owner_id, name) VALUES (canopy.current_user_id(), 'Trip')", logger: TestDatabase.logger)
            try await connection.query("""
                INSERT INTO canopy.records (zone_id, record_name, record_type, fields)
                SELECT id, 'lisbon', 'Place', '{"city": "Lisbon"}' FROM canopy.zones WHERE name = 'Trip'
                """, logger: TestDatabase.logger)
            try await connection.query("COMMIT", logger: TestDatabase.logger)
        }

        let replica = try await cluster.startReplica(named: "r1", logger: TestDatabase.logger)
        #expect(replica.port != primary.port)
        // Just started, it may still be catching up: wait (10 s at most) for it to stream.
        var streaming: [String?] = []
        for _ in 0..<100 where streaming != ["r1 streaming"] {
            streaming = try await TestDatabase.withConnection(primary.adminEndpoint) { connection in
                try await connection.texts("SELECT application_name || ' ' || state FROM pg_stat_replication")
            }
            if streaming != ["r1 streaming"] { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(streaming == ["r1 streaming"], "\(streaming)")

        // A commit after the copy arrives by streaming.
        try await TestDatabase.withConnection(primary.adminEndpoint) { connection in
            try await connection.query("UPDATE canopy.records SET fields = '{\"city\": \"Lisboa\"}' WHERE record_name = 'lisbon'", logger: TestDatabase.logger)
        }
        var seen: [String?] = []
        for _ in 0..<100 where seen != ["Lisboa"] {
            seen = try await TestDatabase.withConnection(replica.adminEndpoint) { connection in
                try await connection.texts("SELECT fields->>'city' FROM canopy.records WHERE record_name = 'lisbon'")
            }
            if seen != ["Lisboa"] { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(seen == ["Lisboa"], "the replica replayed the update")

        // Row-level security on the replica, as the gateway's role.
        let gateway = replica.adminEndpoint.asUser("canopy_gateway", password: nil)
        try await TestDatabase.withConnection(gateway) { connection in
            let asAlice = try await connection.asUser(alice.id) { try await $0.texts("SELECT record_name FROM canopy.records") }
            let asBob = try await connection.asUser(bob.id) { try await $0.texts("SELECT record_name FROM canopy.records") }
            let asNobody = try await connection.asUser(nil) { try await $0.texts("SELECT record_name FROM canopy.records") }
            #expect(asAlice == ["lisbon"] && asBob == [] && asNobody == [], "alice \(asAlice), bob \(asBob), nobody \(asNobody)")
            await #expect(throws: (any Error).self, "a standby refuses writes") {
                try await connection.asUser(alice.id) {
                    try await $0.query("UPDATE canopy.records SET fields = '{}'", logger: TestDatabase.logger)
                }
            }
        }
        try await cluster.stop(logger: TestDatabase.logger)
        #expect(try cluster.replica(named: "r1").status() == nil, "stopping the cluster stops its replicas")
        try? FileManager.default.removeItem(atPath: directory)
    }
}
