import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// `canopy migrate up --distribute` (CitusDistribution, DECISIONS 161): each
/// table goes where CitusDistribution.places says, keeps its rows, keys,
/// policies and triggers, and the shards force row-level security on the
/// workers; a trigger on a shard writes its co-located rows; the migrator
/// still applies sql/ afterwards. The gateway's requests on distributed
/// tables are not tested here: `canopy serve` refuses them until its
/// statements name each zone's owner (CitusServeTests).
@Suite("Citus: distributing the tables", .serialized)
struct CitusDistributionTests {
    /// A migrated Citus database with two users, a zone of records and a
    /// share, written as the tables are on the coordinator.
    static func populated() async throws -> (DatabaseEndpoint, alice: Int64, bob: Int64) {
        let endpoint = try await TestDatabase.shared.migratedCitusDatabase()
        let alice = try await addUser("alice", on: endpoint).0.id
        let bob = try await addUser("bob", on: endpoint).0.id
        try await TestDatabase.withConnection(endpoint) { connection in
            for statement in [
                "INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice), 'Family')",
                "SELECT set_config('canopy.user_id', '\(alice)', false)",
                """
                INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, fields, parent_name)
                SELECT z.id, z.owner_id, v.name, 'Item', '{"n": 1}', v.parent
                  FROM canopy.zones z, (VALUES ('root', NULL), ('child', 'root'), ('leaf', 'child')) v (name, parent)
                 WHERE z.owner_id = \(alice) AND z.name = 'Family'
                """,
                """
                INSERT INTO canopy.shares (zone_id, owner_id, root_record_id, title, public_permission)
                SELECT r.zone_id, r.owner_id, r.id, 'Family tree', 'READ_ONLY' FROM canopy.records r
                 WHERE r.owner_id = \(alice) AND r.record_name = 'root'
                """,
                "SELECT set_config('canopy.user_id', '', false)",
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
            }
        }
        return (endpoint, alice, bob)
    }

    /// What must not change when the tables move: the rows of each table,
    /// the foreign keys, the policies and the triggers (of the tables, not
    /// of the shards Citus keeps on the coordinator, named `table_NNNNNN`).
    static func inventory(_ connection: PostgresConnection) async throws -> [String] {
        var lines: [String] = []
        for table in CitusDistribution.places.keys.sorted() where !table.hasPrefix("schema_") {
            lines += try await connection.texts(PostgresQuery(unsafeSQL: "SELECT '\(table) ' || count(*) FROM canopy.\(table)")).compactMap { $0 }
        }
        lines += try await connection.texts("""
            SELECT 'fk ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
              FROM pg_constraint WHERE contype = 'f' AND connamespace = 'canopy'::regnamespace
               AND conrelid::regclass::text !~ '_[0-9]+$' ORDER BY 1
            """).compactMap { $0 }
        lines += try await connection.texts("""
            SELECT 'policy ' || tablename || ' ' || policyname || ' ' || coalesce(qual, '') || ' ' || coalesce(with_check, '')
              FROM pg_policies WHERE schemaname = 'canopy' AND tablename !~ '_[0-9]+$' ORDER BY 1
            """).compactMap { $0 }
        lines += try await connection.texts("""
            SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname || ' ' || tgenabled::text FROM pg_trigger
             WHERE NOT tgisinternal AND tgrelid::regclass::text LIKE 'canopy.%' AND tgrelid::regclass::text !~ '_[0-9]+$' ORDER BY 1
            """).compactMap { $0 }
        return lines
    }

    @Test("every table goes to its place with its rows, keys, policies and triggers; the workers' shards force row-level security")
    func placesEveryTable() async throws {
        let (endpoint, _, _) = try await Self.populated()
        try await TestDatabase.withConnection(endpoint) { connection in
            let before = try await Self.inventory(connection)
            #expect(try await !CitusDistribution.isDistributed(connection, logger: TestDatabase.logger))
            let placed = try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
            #expect(try await CitusDistribution.isDistributed(connection, logger: TestDatabase.logger))
            let expected = CitusDistribution.places.filter { $0.value != .coordinator }.map(\.key)
            #expect(Set(placed) == Set(expected), "\(placed)")
            let after = try await Self.inventory(connection)
            #expect(before == after, "changed: \(Set(before).symmetricDifference(Set(after)).sorted())")
            #expect(before.contains("records 3") && before.contains("shares 1"), "\(before.prefix(30))")

            // Where each table is: sharded by its column, all in the zones'
            // co-location group, or a copy on every node.
            let rows = try await connection.texts("""
                SELECT c.relname || ' ' || CASE WHEN d.partmethod = 'h' THEN 'by ' || column_to_column_name(d.logicalrelid, d.partkey)
                                                || CASE WHEN d.colocationid = z.colocationid THEN ' with zones' ELSE ' apart' END
                                                WHEN d.repmodel = 't' THEN 'reference' ELSE 'coordinator' END
                  FROM pg_dist_partition d JOIN pg_class c ON c.oid = d.logicalrelid,
                       (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'canopy.zones'::regclass) z
                 WHERE c.relnamespace = 'canopy'::regnamespace
                """).compactMap { $0 }
            for (table, place) in CitusDistribution.places {
                let wanted: String? = switch place {
                case .reference: "\(table) reference"
                case .byOwner: "\(table) by owner_id with zones"
                case .byUser: "\(table) by user_id with zones"
                case .coordinator: nil
                }
                if let wanted { #expect(rows.contains(wanted), "\(table): \(rows.filter { $0.hasPrefix(table + " ") })") }
                if place == .coordinator {
                    #expect(!rows.contains { $0 == "\(table) reference" || $0.hasPrefix("\(table) by ") }, "\(table) stays on the coordinator")
                }
            }

            // Every function of the schema is on every worker, those made
            // before the distribution with a table's row type too
            // (participant_label, which the participants' trigger calls).
            let functions = try await connection.texts(
                "SELECT count(*)::text FROM pg_proc WHERE pronamespace = 'canopy'::regnamespace"
            ).compactMap { $0 }.first ?? "?"
            let onWorkers = try await connection.texts("""
                SELECT result FROM run_command_on_workers($$SELECT count(*) FROM pg_proc WHERE pronamespace = 'canopy'::regnamespace$$)
                """).compactMap { $0 }
            #expect(onWorkers == [functions, functions], "coordinator \(functions), workers \(onWorkers)")

            // On each worker, every shard of records enables and forces
            // row-level security and carries records' policies.
            let shards = try await connection.texts("""
                SELECT result FROM run_command_on_workers($$
                    SELECT count(*) || ' ' || count(*) FILTER (WHERE relrowsecurity AND relforcerowsecurity) || ' '
                           || coalesce(min((SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)), 0)
                      FROM pg_class c WHERE c.relnamespace = 'canopy'::regnamespace AND c.relkind = 'r' AND c.relname ~ '^records_[0-9]+$'
                $$) ORDER BY nodeport
                """).compactMap { $0 }
            let policies = try await connection.texts(
                "SELECT count(*)::text FROM pg_policy WHERE polrelid = 'canopy.records'::regclass"
            ).compactMap { $0 }.first ?? "?"
            #expect(shards.count == 2, "\(shards)")
            for shard in shards {
                let parts = shard.split(separator: " ").map(String.init)
                #expect(parts.count == 3 && parts[0] == parts[1] && Int(parts[0])! > 0 && parts[2] == policies, "worker: \(shard), coordinator's policies \(policies)")
            }
        }
    }

    /// A new zone's triggers derive its owner's membership on the zone's
    /// shard; push_covered answers there, from the zone's memberships and
    /// the push_watchers reference table that a subscription's trigger
    /// keeps (DECISIONS 162). (A record's triggers do not run yet: they
    /// draw positions from canopy.change_seq, on the coordinator only,
    /// docs/plans/ISSUE_67_SCHEMA_MAP.md §8.)
    @Test("a trigger on a shard writes its co-located rows (a new zone's owner membership), and push_covered answers on the zone's shard")
    func triggersWriteOnTheirShard() async throws {
        let (endpoint, alice, bob) = try await Self.populated()
        try await TestDatabase.withConnection(endpoint) { connection in
            try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
            let unmarked = try await connection.texts("""
                SELECT t.tgfoid::regprocedure::text FROM pg_trigger t JOIN pg_dist_partition d ON d.logicalrelid = t.tgrelid
                  JOIN pg_proc p ON p.oid = t.tgfoid
                 WHERE NOT t.tgisinternal AND NOT coalesce('citus.allow_nested_distributed_execution=on' = ANY (p.proconfig), false)
                """).compactMap { $0 }
            #expect(unmarked.isEmpty, "\(unmarked)")
            try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO canopy.zones (owner_id, name) VALUES (\(bob), 'Trips')"), logger: TestDatabase.logger)
            let members = try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT m.user_id::text FROM canopy.memberships m JOIN canopy.zones z ON z.id = m.zone_id AND z.owner_id = m.owner_id
                 WHERE m.owner_id = \(bob) AND z.name = 'Trips'
                """)).compactMap { $0 }
            #expect(members == [String(bob)])
            try await connection.query(PostgresQuery(unsafeSQL: """
                INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope) VALUES (\(alice), 'all', 'DATABASE', 'PRIVATE')
                """), logger: TestDatabase.logger)
            // push_covered on each zone's shard: alice's zone (she
            // subscribes), bob's (he does not).
            let covered = try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT z.name || ' ' || canopy.push_covered(z.id, z.owner_id) FROM canopy.zones z
                 WHERE z.owner_id = \(alice) AND z.name = 'Family'
                UNION ALL
                SELECT z.name || ' ' || canopy.push_covered(z.id, z.owner_id) FROM canopy.zones z
                 WHERE z.owner_id = \(bob) AND z.name = 'Trips'
                """)).compactMap { $0 }
            #expect(covered == ["Family true", "Trips false"])
        }
    }

    /// Every file of sql/ applied again on distributed tables, as an
    /// upgrade that changes them does: trigger functions replaced (and
    /// marked again), triggers and policies dropped and created, the
    /// storage recount.
    @Test("after the distribution, migrate up applies every file of sql/ again and marks the replaced trigger functions; a second distribution places nothing")
    func migratesAfterwards() async throws {
        let (endpoint, alice, bob) = try await Self.populated()
        try await TestDatabase.withConnection(endpoint) { connection in
            try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
            let files = try await connection.texts("SELECT count(*)::text FROM canopy.schema_repeatables").compactMap { $0 }
            try await connection.query("DELETE FROM canopy.schema_repeatables", logger: TestDatabase.logger)
            let applied = try await Migrator(directory: TestDatabase.migrationsDirectory, logger: TestDatabase.logger).up(connection: connection)
            #expect(files == [String(applied.count)] && applied.contains("sql/triggers/storage.sql") && applied.contains("sql/policies/records.sql"), "\(files) \(applied)")
            let usage = try await connection.texts(PostgresQuery(unsafeSQL: "SELECT record_count::text FROM canopy.storage_usage WHERE user_id = \(alice)")).compactMap { $0 }
            #expect(usage == ["3"], "alice's three records, counted again on the shards")
            #expect(try await CitusDistribution.distribute(connection, logger: TestDatabase.logger).isEmpty)
            try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO canopy.zones (owner_id, name) VALUES (\(bob), 'Again')"), logger: TestDatabase.logger)
            let members = try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT count(*)::text FROM canopy.memberships m JOIN canopy.zones z ON z.id = m.zone_id AND z.owner_id = m.owner_id
                 WHERE m.owner_id = \(bob) AND z.name = 'Again'
                """)).compactMap { $0 }
            #expect(members == ["1"])
        }
    }

    @Test("on one PostgreSQL, distributing is refused with words and changes nothing")
    func refusedWithoutCitus() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let distributed = try await TestDatabase.withConnection(endpoint) { connection -> Bool in
            let error = await #expect(throws: StoreError.self) {
                try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
            }
            #expect(error?.message.contains("needs a Citus coordinator") == true, "\(String(describing: error))")
            return try await CitusDistribution.isDistributed(connection, logger: TestDatabase.logger)
        }
        #expect(!distributed)
    }
}
