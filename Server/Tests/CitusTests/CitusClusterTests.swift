import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// `canopy cluster start --citus --workers 2` (issue 67): the coordinator
/// and workers that scripts/test-tier.sh starts for this tier, reached over
/// Unix sockets only, as a developer's cluster is.
@Suite("Citus: the development cluster", .serialized)
struct CitusClusterTests {
    @Test("a coordinator and two active workers, the workers on their sockets only")
    func nodes() async throws {
        let cluster = try TestDatabase.cluster()
        let running = try await cluster.start(logger: TestDatabase.logger)
        #expect(running.citusWorkers.count == 2)
        let nodes = try await TestDatabase.withConnection(running.adminEndpoint) { connection in
            try await connection.texts("SELECT groupid || ' ' || nodename || ' ' || nodeport || ' ' || isactive FROM pg_dist_node ORDER BY groupid")
        }
        let expected = ["0 \(cluster.socketDirectory) \(running.port) true"]
            + running.citusWorkers.map { "\($0.number) \($0.socketDirectory) \($0.port) true" }
        #expect(nodes == expected)
        for worker in running.citusWorkers {
            let listening = try await TestDatabase.withConnection(worker.adminEndpoint) { connection in
                try await connection.texts("SHOW listen_addresses")
            }
            #expect(listening == [""], "worker \(worker.number) listens on TCP: \(listening)")
        }
    }

    @Test("a distributed table: rows on both workers, one shard per owner's query, a shard moved between workers loses nothing")
    func distributeAndMove() async throws {
        let endpoint = try await TestDatabase.shared.citusDatabase()
        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.query("CREATE TABLE notes (owner_id bigint, id int, body text, PRIMARY KEY (owner_id, id))", logger: TestDatabase.logger)
            try await connection.query("SELECT create_distributed_table('notes', 'owner_id')", logger: TestDatabase.logger)
            try await connection.query(
                "INSERT INTO notes SELECT o, n, 'note ' || n FROM generate_series(1, 40) o, generate_series(1, 5) n", logger: TestDatabase.logger
            )
            let workersHolding = try await connection.texts("SELECT count(DISTINCT nodename)::text FROM citus_shards WHERE table_name = 'notes'::regclass")
            #expect(workersHolding == ["2"])

            let plan = try await connection.texts("EXPLAIN SELECT body FROM notes WHERE owner_id = 7 ORDER BY id")
            #expect(plan.contains { $0?.contains("Task Count: 1") == true }, "\(plan)")

            // Owner 7's shard to the other worker, with the default transfer
            // (logical replication: writes go on while it copies).
            let placement = try await connection.query("""
                SELECT s.shardid, s.nodename, s.nodeport, other.nodename, other.nodeport
                  FROM citus_shards s
                  JOIN pg_dist_node other ON other.groupid > 0 AND (other.nodename, other.nodeport) <> (s.nodename, s.nodeport)
                 WHERE s.table_name = 'notes'::regclass AND s.shardid = get_shard_id_for_distribution_column('notes', 7)
                """, logger: TestDatabase.logger)
            var move: (Int64, String, Int32, String, Int32)?
            for try await row in placement.decode((Int64, String, Int32, String, Int32).self) { move = row }
            let (shard, fromHost, fromPort, toHost, toPort) = try #require(move)
            try await connection.query(
                "SELECT citus_move_shard_placement(\(shard), \(fromHost), \(fromPort), \(toHost), \(toPort))", logger: TestDatabase.logger
            )
            let now = try await connection.texts("SELECT nodename FROM citus_shards WHERE shardid = \(shard)")
            #expect(now == [toHost])
            #expect(try await connection.texts("SELECT count(*)::text FROM notes") == ["200"])
            #expect(try await connection.texts("SELECT string_agg(body, ',' ORDER BY id) FROM notes WHERE owner_id = 7")
                    == ["note 1,note 2,note 3,note 4,note 5"])
        }
    }

    @Test("a worker that comes back on another port is registered there again, and its shards answer")
    func workerOnAnotherPort() async throws {
        let cluster = try TestDatabase.cluster()
        var running = try await cluster.start(logger: TestDatabase.logger)
        // In the cluster's own database: prepared at every start.
        let canopy = running.adminEndpoint
        try await explained { try await TestDatabase.withConnection(canopy) { connection in
            try await connection.query("DROP TABLE IF EXISTS port_probe", logger: TestDatabase.logger)
            try await connection.query("CREATE TABLE port_probe (owner_id bigint PRIMARY KEY)", logger: TestDatabase.logger)
            try await connection.query("SELECT create_distributed_table('port_probe', 'owner_id')", logger: TestDatabase.logger)
            try await connection.query("INSERT INTO port_probe SELECT generate_series(1, 50)", logger: TestDatabase.logger)
        } }
        let worker = try #require(running.citusWorkers.first)
        try await cluster.stop(logger: TestDatabase.logger)
        var newPort = try EmbeddedCluster.freePort()
        while newPort == worker.port { newPort = try EmbeddedCluster.freePort() }
        // The port a node tries first at its next start.
        try Data("\(newPort)\n".utf8).write(to: URL(fileURLWithPath: "\(cluster.workersDirectory)/\(worker.number)/port"))

        running = try await cluster.start(logger: TestDatabase.logger)
        #expect(running.citusWorkers.first?.port == newPort)
        try await explained { try await TestDatabase.withConnection(canopy) { connection in
            let registered = try await connection.texts("SELECT nodeport::text FROM pg_dist_node WHERE nodename = \(worker.socketDirectory)")
            #expect(registered == [String(newPort)])
            #expect(try await connection.texts("SELECT count(*)::text FROM port_probe") == ["50"])
            try await connection.query("DROP TABLE port_probe", logger: TestDatabase.logger)
        } }
    }

    @Test("a heavy owner isolated to a shard of its own: its rows alone in that shard, every answer the same")
    func isolateOwner() async throws {
        let endpoint = try await TestDatabase.shared.citusDatabase()
        try await explained { try await TestDatabase.withConnection(endpoint) { connection in
            for statement in [
                "CREATE TABLE notes (owner_id bigint, id int, body text, PRIMARY KEY (owner_id, id))",
                "SELECT create_distributed_table('notes', 'owner_id')",
                "INSERT INTO notes SELECT o, n, 'note ' || n FROM generate_series(1, 40) o, generate_series(1, 5) n",
                "SELECT isolate_tenant_to_new_shard('notes', 7, shard_transfer_mode => 'block_writes')",
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
            }
            let owners = try await connection.texts("""
                SELECT string_agg(DISTINCT n.owner_id::text, ',')
                  FROM notes n WHERE get_shard_id_for_distribution_column('notes', n.owner_id) = get_shard_id_for_distribution_column('notes', 7)
                """)
            #expect(owners == ["7"], "owner 7's shard holds only owner 7: \(owners)")
            #expect(try await connection.texts("SELECT count(*)::text FROM notes") == ["200"])
            #expect(try await connection.texts("SELECT count(*)::text FROM notes WHERE owner_id = 7") == ["5"])
        } }
    }

    @Test("a cluster grown by a worker: it joins at the next start, a rebalance moves shards onto it, nothing is lost")
    func grow() async throws {
        // A cluster of its own: the tier's keeps its two workers.
        let directory = try TestDatabase.cluster().dataDirectory + "-grow"
        let cluster = EmbeddedCluster(dataDirectory: directory)
        try cluster.makeCitus(workers: 1)
        do {
            var running = try await cluster.start(logger: TestDatabase.logger)
            #expect(running.citusWorkers.count == 1)
            try await explained { try await TestDatabase.withConnection(running.adminEndpoint) { connection in
                try await connection.query("CREATE TABLE notes (owner_id bigint PRIMARY KEY, body text)", logger: TestDatabase.logger)
                try await connection.query("SELECT create_distributed_table('notes', 'owner_id')", logger: TestDatabase.logger)
                try await connection.query("INSERT INTO notes SELECT o, 'note' FROM generate_series(1, 100) o", logger: TestDatabase.logger)
            } }
            try cluster.makeCitus(workers: 2)
            #expect(throws: StoreError.self, "a cluster does not shrink by --workers") { try cluster.makeCitus(workers: 1) }
            running = try await cluster.start(logger: TestDatabase.logger)
            let newcomer = try #require(running.citusWorkers.last)
            #expect(running.citusWorkers.count == 2)
            try await explained { try await TestDatabase.withConnection(running.adminEndpoint) { connection in
                try await connection.query("SELECT rebalance_table_shards('notes', shard_transfer_mode => 'block_writes')", logger: TestDatabase.logger)
                let onNewcomer = try await connection.texts("SELECT count(*)::text FROM citus_shards WHERE table_name = 'notes'::regclass AND nodename = \(newcomer.socketDirectory)")
                #expect(onNewcomer != ["0"], "the rebalance moved shards to the new worker")
                #expect(try await connection.texts("SELECT count(*)::text FROM notes") == ["100"])
            } }
        } catch {
            try? await cluster.stop(logger: TestDatabase.logger)
            throw error
        }
        try await cluster.stop(logger: TestDatabase.logger)
    }
}
