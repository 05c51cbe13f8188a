@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// Identity by SET LOCAL (issue 67, step 2; DECISIONS 154): on Citus the
/// shards' policies run on the workers, which `set_config` never reaches.
/// The gateway's own reads and writes (`RequestDatabase` with the Citus
/// engine) must act for the caller on every shard of every worker.
@Suite("Citus: who a request acts for reaches every worker", .serialized)
struct CitusIdentityTests {
    /// A migrated Citus database with `notes`: 20 owners' rows spread over
    /// both workers' shards, each row readable and writable only by its
    /// `reader` (forced RLS, the policy on every shard).
    static func notesDatabase() async throws -> DatabaseEndpoint {
        let endpoint = try await TestDatabase.shared.migratedCitusDatabase()
        try await TestDatabase.withConnection(endpoint) { connection in
            for statement in [
                "CREATE TABLE notes (owner_id bigint, reader bigint, body text, PRIMARY KEY (owner_id, body))",
                "SELECT create_distributed_table('notes', 'owner_id')",
                "ALTER TABLE notes ENABLE ROW LEVEL SECURITY",
                "ALTER TABLE notes FORCE ROW LEVEL SECURITY",
                // The setting itself, not canopy.current_user_id(): the
                // schema's functions are not on the workers yet (step 1).
                """
                CREATE POLICY reader_only ON notes
                    USING (reader::text = current_setting('canopy.user_id', true))
                    WITH CHECK (reader::text = current_setting('canopy.user_id', true))
                """,
                "GRANT SELECT, INSERT ON notes TO canopy_gateway",
                "INSERT INTO notes SELECT o, r, 'n' || o || '-' || r FROM generate_series(1, 20) o, generate_series(1, 3) r",
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
            }
            let workers = try await connection.texts("SELECT count(DISTINCT nodename)::text FROM citus_shards WHERE table_name = 'notes'::regclass")
            #expect(workers == ["2"], "the rows are on both workers")
        }
        return endpoint
    }

    static func withGateway(_ endpoint: DatabaseEndpoint, _ body: @Sendable (RequestDatabase) async throws -> Void) async throws {
        let database = try RequestDatabase(
            endpoint: endpoint.asUser("canopy_gateway", password: nil), maximumConnections: 2, engine: .citus, logger: TestDatabase.logger
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.primary.run() }
            defer { group.cancelAll() }
            try await body(database)
        }
    }

    @Test("a read acts for its caller on every shard: all of reader 2's rows, from both workers, and no one else's")
    func reads() async throws {
        let endpoint = try await Self.notesDatabase()
        try await explained { try await Self.withGateway(endpoint) { database in
            let answers = try await [Int64(2), 3, 99].asyncMap { reader in
                try await database.read(
                    PostgresQuery(unsafeSQL: "SELECT count(*), count(DISTINCT owner_id) FROM notes", binds: PostgresBindings()),
                    parameterTypes: [], as: reader, logger: TestDatabase.logger
                ) { rows in try rows.first!.decode((Int64, Int64).self) }
            }
            #expect(answers[0] == (20, 20) && answers[1] == (20, 20), "\(answers)")
            #expect(answers[2] == (0, 0), "nobody's rows for a reader with none: \(answers[2])")
            let nobody = try await database.read(
                PostgresQuery(unsafeSQL: "SELECT count(*) FROM notes", binds: PostgresBindings()), parameterTypes: [], as: nil, logger: TestDatabase.logger
            ) { rows in try rows.first!.decode(Int64.self) }
            #expect(nobody == 0)
        } }
    }

    @Test("a write acts for its caller on every worker: its rows on two workers commit together; another reader's row is refused")
    func writes() async throws {
        let endpoint = try await Self.notesDatabase()
        try await explained { try await Self.withGateway(endpoint) { database in
            // Owners on different workers, so the write is a two-phase commit.
            let owners = try await TestDatabase.withConnection(endpoint) { connection in
                try await connection.texts("""
                    SELECT min(o)::text FROM generate_series(1, 20) o
                      JOIN citus_shards s ON s.shardid = get_shard_id_for_distribution_column('notes', o)
                     GROUP BY s.nodename ORDER BY 1
                    """).compactMap { $0.flatMap(Int64.init) }
            }
            #expect(owners.count == 2)
            try await database.withUser(2, logger: TestDatabase.logger) { connection in
                for owner in owners {
                    try await connection.query("INSERT INTO notes VALUES (\(owner), 2, 'written')", logger: TestDatabase.logger)
                }
            }
            await #expect(throws: PSQLError.self) {
                try await database.withUser(2, logger: TestDatabase.logger) { connection in
                    try await connection.query("INSERT INTO notes VALUES (\(owners[1]), 3, 'not yours')", logger: TestDatabase.logger)
                }
            }
            let written = try await TestDatabase.withConnection(endpoint) { connection in
                try await connection.texts("SELECT string_agg(owner_id || ':' || reader, ',' ORDER BY owner_id) FROM notes WHERE body IN ('written', 'not yours')")
            }
            #expect(written == [owners.map { "\($0):2" }.joined(separator: ",")])
        } }
    }

    /// A statement routed to one worker whose function reads a shard on the
    /// other (a nested execution, as a policy's probe or modify_records'
    /// writes run on the new node after a shard move): the worker's own
    /// connection there must act for the caller too. It did not (the
    /// worker recorded none of the SET LOCALs it was sent), and a save
    /// during a shard move was refused (DECISIONS 180): this needs Canopy's
    /// second Citus patch and the roles' `citus.propagate_set_commands`.
    @Test("a worker's nested statement on the other worker acts for the caller, in a read and in a write's transaction")
    func nestedOnTheOtherWorker() async throws {
        let endpoint = try await Self.notesDatabase()
        let owners = try await TestDatabase.withConnection(endpoint) { connection in
            for statement in [
                """
                CREATE FUNCTION notes_reader_seen(p_owner bigint) RETURNS text LANGUAGE plpgsql
                    SET citus.allow_nested_distributed_execution = on
                AS $$
                DECLARE seen text;
                BEGIN
                    EXECUTE 'SELECT max(reader)::text FROM notes WHERE owner_id = $1' INTO seen USING p_owner;
                    RETURN coalesce(seen, 'nobody') || ' as ' || coalesce(nullif(current_setting('canopy.user_id', true), ''), 'unset');
                END
                $$
                """,
                "SELECT create_distributed_function('notes_reader_seen(bigint)')",
                "GRANT EXECUTE ON FUNCTION notes_reader_seen(bigint) TO canopy_gateway",
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
            }
            return try await connection.texts("""
                SELECT min(o)::text FROM generate_series(1, 20) o
                  JOIN citus_shards s ON s.shardid = get_shard_id_for_distribution_column('notes', o)
                 GROUP BY s.nodename ORDER BY 1
                """).compactMap { $0.flatMap(Int64.init) }
        }
        #expect(owners.count == 2, "an owner on each worker: \(owners)")
        let (here, there) = (owners[0], owners[1])
        let statement = "SELECT DISTINCT notes_reader_seen(\(there)) FROM notes WHERE owner_id = \(here) AND reader = 2"
        try await Self.withGateway(endpoint) { database in
            let read = try await database.read(
                PostgresQuery(unsafeSQL: statement, binds: PostgresBindings()), parameterTypes: [], as: 2, logger: TestDatabase.logger
            ) { rows in try rows.map { try $0.decode(String.self) } }
            #expect(read == ["2 as 2"], "the other worker's rows read for reader 2: \(read)")
            let written = try await database.withUser(2, changesZones: false, logger: TestDatabase.logger) { connection in
                try await connection.query("INSERT INTO notes VALUES (\(here), 2, 'nested')", logger: TestDatabase.logger)
                return try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger).collect().map { try $0.decode(String.self) }
            }
            #expect(written == ["2 as 2"], "the other worker's rows read for reader 2, after a write: \(written)")
        }
    }
}

extension Array where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
