import CanopyAdmin
import CanopyTestSupport
import Foundation
import Testing

/// `canopy schema apply` on distributed tables (DECISIONS 187): a declared
/// field's btree index is built on every shard; a queryable list's or a
/// searchable field's GIN index, which needs Canopy's operator classes, is
/// refused before anything is written, naming the field (Citus refused it
/// itself once built, and left it invalid).
@Suite("Citus: canopy schema apply on distributed tables", .serialized,
       .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct CitusSchemaApplyTests {
    @Test("btree indexes are built on every shard; a queryable list or a searchable field is refused, naming it, with nothing written")
    func applyOnDistributedTables() async throws {
        let endpoint = try await TestDatabase.shared.migratedCitusDatabase()
        try await TestDatabase.withConnection(endpoint) { connection in
            try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("citus-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func apply(_ text: String) throws -> Subprocess.Result {
            let file = folder.appendingPathComponent("schema.ckdb")
            try text.write(to: file, atomically: true, encoding: .utf8)
            return try CanopyBinary.run(["schema", "apply", file.path, "--database-url", endpoint.url, "--migrations-dir", TestDatabase.migrationsDirectory])
        }

        let refused = try apply("""
            DEFINE SCHEMA
                RECORD TYPE Item (endDate TIMESTAMP QUERYABLE SORTABLE, tags LIST<STRING> QUERYABLE, note STRING SEARCHABLE);
            """)
        #expect(!refused.succeeded, "\(refused.output)")
        #expect(refused.output.contains("Item.tags is QUERYABLE") && refused.output.contains("Item.note is SEARCHABLE"), "\(refused.output)")
        #expect(refused.output.contains("nothing was applied"), "\(refused.output)")

        let applied = try apply("""
            DEFINE SCHEMA
                RECORD TYPE Item (endDate TIMESTAMP QUERYABLE SORTABLE, tags LIST<STRING>, note STRING);
            """)
        #expect(applied.succeeded, "\(applied.output)")
        // The index on the coordinator's table, valid, and on each shard.
        let (valid, shards, placed) = try await TestDatabase.withConnection(endpoint) { connection in
            let valid = try await connection.texts("""
                SELECT count(*)::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                 WHERE c.relname LIKE 'records\\_schema\\_%' AND i.indisvalid
                """)
            let shards = try await connection.texts("SELECT count(*)::text FROM citus_shards WHERE table_name = 'canopy.records'::regclass")
            let placed = try await connection.texts("""
                SELECT sum(result::int)::text FROM run_command_on_shards('canopy.records',
                  $$SELECT count(*) FROM pg_indexes WHERE tablename = split_part('%s', '.', 2) AND indexname LIKE 'records\\_schema\\_%%'$$)
                """)
            return (valid.first ?? nil, shards.first ?? nil, placed.first ?? nil)
        }
        #expect(valid == "1", "one schema index, valid: \(String(describing: valid))")
        #expect(placed != nil && placed == shards, "the index on each of the \(String(describing: shards)) shards: \(String(describing: placed))")
    }
}
