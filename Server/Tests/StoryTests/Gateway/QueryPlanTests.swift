@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyPlanner
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// The records query for one zone reads that zone through an index, as the
/// gateway role with a user set (never as a superuser, whose plan differs),
/// while another user's 20,000 records sit in the same table.
@Suite("Query plans")
struct QueryPlanTests {
    @Test("records in a zone: index scans, never a sequential scan of all records")
    func recordsUseIndexes() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (owner, _) = try await addUser("owner", on: endpoint)
        let (other, _) = try await addUser("other", on: endpoint)
        try await TestDatabase.withConnection(endpoint) { connection in
            for (user, zones, perZone) in [(owner.id, 1, 300), (other.id, 20, 1000)] {
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO canopy.zones (owner_id, name) SELECT \(user), 'Z' || g FROM generate_series(1, \(zones)) g;
                    """), logger: TestDatabase.logger)
                try await connection.query(PostgresQuery(unsafeSQL: "SELECT set_config('canopy.user_id', '\(user)', false)"), logger: TestDatabase.logger)
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO canopy.records (zone_id, record_name, record_type, fields)
                    SELECT z.id, 'r' || g, 'Fast', jsonb_build_object('hours', g % 24, 'endDate', jsonb_build_object('type', 'TIMESTAMP', 'value', 1700000000000 + g * 60000))
                      FROM canopy.zones z, generate_series(1, \(perZone)) g WHERE z.owner_id = \(user) AND z.name LIKE 'Z%'
                    """), logger: TestDatabase.logger)
            }
            try await connection.query("ANALYZE", logger: TestDatabase.logger)
        }
        let documents = [
            "{ records(scope: PRIVATE, zone: {zoneName: \"Z1\"}, recordType: \"Fast\", limit: 50) { records { recordName } cursor } }",
            "{ records(scope: PRIVATE, zone: {zoneName: \"Z1\"}, recordType: \"Fast\", filter: \"endDate > 1700000600000 AND hours < 12\", sort: [{field: \"endDate\"}], limit: 50) { records { recordName fields } cursor } }",
            "{ lookup(scope: PRIVATE, zone: {zoneName: \"Z1\"}, recordNames: [\"r1\", \"r2\"]) { record { recordName } } }",
        ]
        let schema: RecordSchema = ["hours": .int64, "endDate": .timestamp]
        for document in documents {
            let request = try ParsedRequest(query: document)
            let field = try request.rootFields()[0]
            let query = (field.name == "records"
                ? try RecordsPlan(field, request: request, schema: schema, secret: SigningKey(Data(repeating: 1, count: 32))).statement
                : try LookupPlan(field, request: request).statement).bindingCaller(owner.id)
            let plan = try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { connection in
                try await connection.asUser(owner.id) { connection in
                    try await connection.texts(PostgresQuery(unsafeSQL: "EXPLAIN " + query.sql, binds: query.binds)).compactMap { $0 }.joined(separator: "\n")
                }
            }
            #expect(!plan.contains("Seq Scan on records"), "\(document)\n\(plan)")
            #expect(plan.contains("Index Scan") || plan.contains("Index Only Scan") || plan.contains("Bitmap Index Scan"), "\(document)\n\(plan)")
        }
    }

    @Test("lookup before any ANALYZE: the gateway's generic plan probes the (zone, recordName) index for each name, never reads the zone")
    func coldLookupProbesTheIndex() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (owner, _) = try await addUser("owner", on: endpoint)
        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.query("ALTER TABLE canopy.records SET (autovacuum_enabled = false)", logger: TestDatabase.logger)
            try await connection.query(PostgresQuery(unsafeSQL: "SELECT set_config('canopy.user_id', '\(owner.id)', false)"), logger: TestDatabase.logger)
            try await connection.query(PostgresQuery(unsafeSQL: """
                INSERT INTO canopy.records (zone_id, record_name, record_type, fields)
                SELECT z.id, 'r' || g, 'Fast', jsonb_build_object('hours', g % 24)
                  FROM canopy.zones z, generate_series(1, 2000) g WHERE z.owner_id = \(owner.id) AND z.name = '_defaultZone'
                """), logger: TestDatabase.logger)
            let analyzed = try await connection.texts("SELECT (reltuples < 0)::text FROM pg_class WHERE oid = 'canopy.records'::regclass")
            #expect(analyzed == ["true"], "the test needs a table never analyzed")
        }
        let request = try ParsedRequest(query: "{ lookup(scope: PRIVATE, zone: {zoneName: \"_defaultZone\", ownerName: \"\(owner.userRecordName)\"}, recordNames: [\"r1234\"]) { record { recordName fields } } }")
        let query = try LookupPlan(try request.rootFields()[0], request: request).statement
        let plan = try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { connection in
            try await connection.asUser(owner.id) { connection in
                // What the gateway's connections run: a prepared statement's
                // generic plan (migrations/0016), made now, before any ANALYZE.
                // (EXPLAIN of the statement itself would plan it for the values.)
                try await connection.query("SET LOCAL plan_cache_mode = force_generic_plan", logger: TestDatabase.logger)
                try await connection.query(PostgresQuery(unsafeSQL: "PREPARE cold_lookup AS " + query.sql), logger: TestDatabase.logger)
                let types = try await connection.texts("SELECT unnest(parameter_types)::text FROM pg_prepared_statements WHERE name = 'cold_lookup'")
                // The values, in the order LookupPlan binds them (zone, owner, keys, names,
                // then the caller, SQLBuilder.caller()): a utility statement cannot take
                // bind parameters.
                let values = ["_defaultZone", owner.userRecordName, "record", "recordName", "fields", "{r1234}", String(owner.id)]
                #expect(values.count == types.count, "LookupPlan binds \(types.count) values now: update this list")
                let literals = zip(values, types).map { "'\($0)'::\($1 ?? "text")" }.joined(separator: ", ")
                return try await connection.texts(PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE cold_lookup(\(literals))"))
                    .compactMap { $0 }.joined(separator: "\n")
            }
        }
        #expect(plan.contains("records_zone_id_record_name_key"), "\(plan)")
        #expect(!plan.contains("Bitmap Heap Scan on records") && !plan.contains("Seq Scan on records"), "\(plan)")
    }

    /// What `canopy schema apply` builds for this test's schema.
    static let declared = """
        RECORD TYPE Fast ("___recordID" REFERENCE QUERYABLE, endDate TIMESTAMP QUERYABLE SORTABLE,
                          hours INT64 QUERYABLE SORTABLE, note STRING QUERYABLE SORTABLE SEARCHABLE, tags LIST<STRING> QUERYABLE);
        """

    @Test("declared fields: every indexed operator, both sort directions and a page 50 pages deep run as index conditions (200,000 records)",
          .enabled(if: CanopyBinary.exists, "needs the canopy binary"))
    func declaredFieldsUseTheirIndexes() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (owner, _) = try await addUser("owner", on: endpoint)
        let (other, _) = try await addUser("other", on: endpoint)
        try await TestDatabase.withConnection(endpoint) { connection in
            for (user, count) in [(owner.id, 200_000), (other.id, 20_000)] {
                try await connection.query("SET session_replication_role = replica", logger: TestDatabase.logger)
                try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO canopy.zones (owner_id, name) VALUES (\(user), 'Big')"), logger: TestDatabase.logger)
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, fields, created_by, modified_by, change_seq, change_tag)
                    SELECT z.id, z.owner_id, 'r' || g, 'Fast', jsonb_build_object('hours', g % 48, 'note', 'fast number ' || g,
                           'tags', jsonb_build_array('t' || (g % 10), 'u' || g),
                           'endDate', jsonb_build_object('type', 'TIMESTAMP', 'value', 1700000000000 + g::bigint * 60000)),
                           \(user), \(user), g, 't' || g
                      FROM canopy.zones z, generate_series(1, \(count)) g WHERE z.owner_id = \(user) AND z.name = 'Big';
                    """), logger: TestDatabase.logger)
            }
            // Loaded with triggers off: the memberships row-level security reads are made afterwards.
            try await connection.query("SELECT canopy.rebuild_memberships()", logger: TestDatabase.logger)
        }
        let applied = try schemaCommand(["apply"], file: Self.declared, on: endpoint)
        #expect(applied.succeeded, "\(applied.output)")
        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.query("ANALYZE canopy.records", logger: TestDatabase.logger)
        }
        let document = try RecordTypesParser.parse(Self.declared)
        let indexes = RecordTypeIndex.indexes(for: document)
        func index(_ field: String, _ kind: RecordTypeIndex.Kind = .btree) -> String {
            indexes.first { $0.fieldName == field && $0.kind == kind }!.name
        }
        let schema = document[recordType: "Fast"]!.recordSchema(mode: .production)
        let secret = SigningKey(Data(repeating: 3, count: 32))
        let range: JSONValue = .array([.int(1_700_000_000_000 + 1_000 * 60_000), .int(1_700_000_000_000 + 150_000 * 60_000)])

        func plan(_ arguments: String, cursor: String? = nil) throws -> RecordsPlan {
            var variables: [String: JSONValue] = ["a": range]
            if let cursor { variables["c"] = .string(cursor) }
            let request = try ParsedRequest(query: """
                query($a: JSON, $c: String) { records(scope: PRIVATE, zone: {zoneName: "Big"}, recordType: "Fast", args: $a, cursor: $c, limit: 100\(arguments)) { records { recordName } cursor } }
                """, variables: variables)
            return try RecordsPlan(try request.rootFields()[0], request: request, schema: schema, secret: secret)
        }
        func explain(_ plan: RecordsPlan) async throws -> String {
            try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { connection in
                try await connection.asUser(owner.id) { connection in
                    let statement = plan.statement.bindingCaller(owner.id)
                    return try await connection.texts(PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + statement.sql, binds: statement.binds))
                        .compactMap { $0 }.joined(separator: "\n")
                }
            }
        }

        let cases: [(String, String, String, String)] = [
            ("equality", ", filter: \"hours == 7\"", index("hours"), "canopy.number_field(fields, 'hours'::text) = "),
            ("IN", ", filter: \"hours IN {7, 9}\"", index("hours"), "canopy.number_field(fields, 'hours'::text) = ANY"),
            ("range, sorted", ", filter: \"endDate >= %@ AND endDate < %@\", sort: [{field: \"endDate\"}]", index("endDate"), "canopy.timestamp_field(fields, 'endDate'::text) >= "),
            ("BEGINSWITH", ", filter: \"note BEGINSWITH 'fast number 1999'\", sort: [{field: \"note\"}]", index("note"), "canopy.string_field(fields, 'note'::text))::text >= "),
            ("sort descending", ", sort: [{field: \"hours\", direction: DESC}]", index("hours"), "canopy.number_field(fields, 'hours'::text) IS NOT NULL"),
            ("full text", ", filter: \"self CONTAINS 'Number 4242'\"", index("note", .search), "OPERATOR(canopy.@@)"),
            ("list CONTAINS", ", filter: \"tags CONTAINS 'u4242'\"", index("tags", .list), "OPERATOR(canopy.@>)"),
        ]
        for (name, arguments, expectedIndex, condition) in cases {
            let text = try await explain(try plan(arguments))
            #expect(text.contains(" on \(expectedIndex) ") || text.contains(" using \(expectedIndex) "), "\(name): \(expectedIndex)\n\(text)")
            #expect(text.split(separator: "\n").contains { $0.contains("Index Cond:") && $0.contains(condition) }, "\(name): \(condition)\n\(text)")
            #expect(!text.contains("Seq Scan on records"), "\(name)\n\(text)")
        }

        // Fifty pages in, the cursor is an index condition and the page still reads about limit + 1 rows.
        for (direction, seek) in [("ASC", "ROW(canopy.timestamp_field(fields, 'endDate'::text)"), ("DESC", "canopy.timestamp_field(fields, 'endDate'::text) <= ")] {
            let arguments = ", filter: \"endDate >= %@ AND endDate < %@\", sort: [{field: \"endDate\", direction: \(direction)}]"
            var cursor: String?
            var seen = 0
            for _ in 0..<50 {
                let page = try plan(arguments, cursor: cursor)
                let decoded = try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { connection in
                    try await connection.asUser(owner.id) { connection in
                        var decoded: RecordsPlan.Row?
                        let statement = page.statement.bindingCaller(owner.id)
                        for try await row in try await connection.query(PostgresQuery(unsafeSQL: statement.sql, binds: statement.binds), logger: TestDatabase.logger) {
                            decoded = try RecordsPlan.decode(row)
                        }
                        return decoded
                    }
                }
                let row = try #require(decoded)
                seen += (try JSONSerialization.jsonObject(with: Data((row.records ?? "[]").utf8)) as? [Any])?.count ?? 0
                let response = try #require(try page.answer(row))
                cursor = (try JSONSerialization.jsonObject(with: Data(response.utf8)) as? [String: Any])?["cursor"] as? String
            }
            #expect(seen == 5_000)
            guard let cursor else {
                Issue.record("no cursor after 50 pages (\(direction))")
                continue
            }
            let text = try await explain(try plan(arguments, cursor: cursor))
            let scan = text.split(separator: "\n").first { $0.contains(index("endDate")) } ?? ""
            #expect(text.split(separator: "\n").contains { $0.contains("Index Cond:") && $0.contains(seek) }, "\(direction)\n\(text)")
            let rows = Int(scan.split(separator: "rows=").last?.split(separator: " ").first ?? "") ?? .max
            // limit + 1, and descending also re-reads the rows equal to the cursor's value (one here).
            #expect(rows <= 102, "\(direction): the deep page's index scan read \(rows) rows\n\(text)")
        }
        _ = other
    }
}
