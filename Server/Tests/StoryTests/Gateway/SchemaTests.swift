@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyPlanner
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// Runs `canopy schema ARGS` against `endpoint`, with `text` as the schema
/// file when given (written to a temporary file).
func schemaCommand(_ arguments: [String], file text: String? = nil, on endpoint: DatabaseEndpoint, mode: String = "development") throws -> Subprocess.Result {
    var arguments = ["schema"] + arguments
    if let text {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("schema-\(UUID().uuidString).ckdb").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        arguments.insert(path, at: 2)
    }
    if arguments[1] != "check" {
        arguments += ["--database-url", endpoint.url, "--migrations-dir", TestDatabase.migrationsDirectory]
    }
    return try CanopyBinary.run(arguments, environment: ["CANOPY_MODE": mode])
}

/// `canopy schema apply` and `export` as separate processes against a real
/// database, and what production mode refuses, over HTTP through Hummingbird.
@Suite("Record-type schemas", .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct SchemaTests {
    static let schema = """
        DEFINE SCHEMA
            RECORD TYPE Fast (
                "___recordID" REFERENCE QUERYABLE,
                "___createTime" TIMESTAMP SORTABLE,
                endDate TIMESTAMP QUERYABLE SORTABLE,
                hours INT64 QUERYABLE SORTABLE,
                note STRING SEARCHABLE,
                mood STRING,
                GRANT WRITE TO "_creator",
                GRANT READ TO "_world"
            );
        """

    @Test("a grant stored before CREATE ROLE was read (a role never declared) is exported with its CREATE ROLE, so export | apply round-trips")
    func legacyGrantRoundTrips() async throws {
        let harness = try await GatewayHarness.make()
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            _ = try await connection.texts("""
                INSERT INTO canopy.record_type_grants (record_type, privilege, role_name, position)
                VALUES ('Note', 'WRITE', 'Editors', 0) RETURNING role_name
                """)
        }
        let exported = try schemaCommand(["export"], on: harness.endpoint)
        #expect(exported.succeeded && exported.output.contains("CREATE ROLE Editors;") && exported.output.contains("GRANT WRITE TO \"Editors\""), "\(exported.output)")
        let applied = try schemaCommand(["apply"], file: exported.output, on: harness.endpoint)
        #expect(applied.succeeded && applied.output.contains("create role Editors"), "\(applied.output)")
        let again = try schemaCommand(["apply"], file: exported.output, on: harness.endpoint)
        #expect(again.succeeded && again.output.contains("no changes"), "\(again.output)")
    }

    @Test("apply records types and builds indexes; export prints them, inferred types included; export | apply changes nothing")
    func roundTrip() async throws {
        let harness = try await GatewayHarness.make()
        let applied = try schemaCommand(["apply"], file: Self.schema, on: harness.endpoint)
        #expect(applied.succeeded, "\(applied.output)")
        #expect(applied.output.contains("add Fast.endDate TIMESTAMP QUERYABLE SORTABLE"), "\(applied.output)")
        #expect(applied.output.contains("indexes: 4 built"), "createTime, endDate, hours, and the search index: \(applied.output)")
        let valid = try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.texts("""
                SELECT count(*)::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                 WHERE c.relname LIKE 'records_schema_%' AND i.indisvalid
                """)
        }
        #expect(valid == ["4"])

        // A first save in development mode adds an inferred field.
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: harness.aliceToken)
            _ = try await save(client, token: harness.aliceToken, [["recordName": "n1", "recordType": "Note", "fields": ["text": "hello", "pinned": true]],
                                                                    ["recordName": "f1", "recordType": "Fast", "fields": ["hours": 16, "note": "long one",
                                                                     "endDate": ["type": "TIMESTAMP", "value": 1_700_000_000_000]]]])
        }
        let exported = try schemaCommand(["export"], on: harness.endpoint)
        #expect(exported.succeeded, "\(exported.output)")
        let document = try RecordTypesParser.parse(exported.output)
        #expect(document[recordType: "Note"]?[field: "pinned"]?.schema.type == .boolean, "inferred types are exported:\n\(exported.output)")
        #expect(document[recordType: "Fast"] == (try RecordTypesParser.parse(Self.schema))[recordType: "Fast"], "\(exported.output)")

        let again = try schemaCommand(["apply"], file: exported.output, on: harness.endpoint)
        #expect(again.succeeded, "\(again.output)")
        #expect(again.output.contains("applied no changes"), "\(again.output)")
        #expect(again.output.contains("0 built, 0 rebuilt, 0 dropped, 4 kept"), "\(again.output)")
        #expect(try schemaCommand(["export"], on: harness.endpoint).output == exported.output)

        // An index left invalid (an interrupted CONCURRENTLY build) is rebuilt.
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            _ = try await connection.texts("""
                UPDATE pg_index SET indisvalid = false WHERE indexrelid = (SELECT ('canopy.' || min(index_name))::regclass FROM canopy.schema_indexes)
                """)
        }
        let withNote = Self.schema + "\nRECORD TYPE Note (pinned BOOLEAN, text STRING);"
        let repaired = try schemaCommand(["apply"], file: withNote, on: harness.endpoint)
        #expect(repaired.output.contains("rebuilding invalid index"), "\(repaired.output)")
        #expect(repaired.output.contains("1 rebuilt"), "\(repaired.output)")
        // The rebuilt index has statistics at once (ANALYZE), so the planner can use it well.
        #expect(repaired.output.contains("ANALYZE canopy.records"), "\(repaired.output)")
        let statistics = try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.texts("""
                SELECT count(*)::text FROM pg_stats WHERE schemaname = 'canopy'
                   AND tablename = (SELECT min(index_name) FROM canopy.schema_indexes)
                """)
        }
        #expect(statistics != ["0"], "the rebuilt expression index has statistics")

        // Dropping an index (and a field nobody holds) in development.
        let smaller = withNote.replacingOccurrences(of: "hours INT64 QUERYABLE SORTABLE,", with: "hours INT64,")
            .replacingOccurrences(of: "mood STRING,", with: "")
        let dropped = try schemaCommand(["apply"], file: smaller, on: harness.endpoint)
        #expect(dropped.succeeded, "\(dropped.output)")
        #expect(dropped.output.contains("drop Fast.mood STRING"), "\(dropped.output)")
        #expect(dropped.output.contains("1 dropped"), "\(dropped.output)")

        // A field records hold is never dropped, in any mode.
        let held = try schemaCommand(["apply"], file: Self.schema + "\nRECORD TYPE Note (text STRING);", on: harness.endpoint)
        #expect(!held.succeeded)
        #expect(held.output.contains("Note.pinned is held by 1 record"), "\(held.output)")
        #expect(held.output.contains("nothing was applied"), "\(held.output)")
    }

    @Test("schema indexes lists every index on records with what it serves, and counts the scans of the one a query used")
    func indexUsage() async throws {
        let harness = try await GatewayHarness.make()
        #expect(try schemaCommand(["apply"], file: Self.schema, on: harness.endpoint).succeeded)
        func report() throws -> [[String: Any]] {
            let listed = try schemaCommand(["indexes", "--json"], on: harness.endpoint)
            #expect(listed.succeeded, "\(listed.output)")
            let object = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any]
            return object?["indexes"] as? [[String: Any]] ?? []
        }
        let before = try report()
        let declared = before.filter { $0["origin"] as? String == "declared" }
            .map { "\($0["recordType"] ?? "").\($0["fieldName"] ?? "") \($0["kind"] ?? "")" }
        #expect(declared == ["Fast.___createTime btree", "Fast.endDate btree", "Fast.hours btree", "Fast.note search"], "\(before)")
        let base = Set(before.filter { $0["origin"] as? String == "base" }.compactMap { $0["name"] as? String })
        #expect(base.isSuperset(of: ["records_pkey", "records_zone_id_record_name_key", "records_zone_change_idx"]), "\(base)")
        #expect(!base.contains("records_fields_idx"), "the GIN over all fields is gone (migrations/0015)")
        #expect(before.allSatisfy { ($0["purpose"] as? String)?.hasPrefix("not Canopy's") != true }, "\(before)")

        func scans(_ field: String, in report: [[String: Any]]) -> Int {
            (report.first { $0["fieldName"] as? String == field }?["scans"] as? Int) ?? -1
        }
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            _ = try await connection.texts("SET enable_seqscan = off")
            _ = try await connection.texts("""
                SELECT record_name FROM canopy.records WHERE zone_id = 1 AND record_type = 'Fast'
                   AND canopy.timestamp_field(fields, 'endDate') IS NOT NULL
                 ORDER BY canopy.timestamp_field(fields, 'endDate') LIMIT 1
                """)
            _ = try await connection.texts("SELECT pg_stat_force_next_flush()::text")
            _ = try await connection.texts("SELECT 'flushed'")
        }
        let after = try report()
        #expect(scans("endDate", in: after) == scans("endDate", in: before) + 1, "\(after)")
        #expect(scans("hours", in: after) == scans("hours", in: before))

        let text = try schemaCommand(["indexes"], on: harness.endpoint)
        #expect(text.output.contains("Fast.endDate: QUERYABLE/SORTABLE"), "\(text.output)")
        #expect(text.output.contains("declared but never scanned: Fast.___createTime, Fast.hours, Fast.note"), "\(text.output)")
    }

    @Test("development apply retypes a QUERYABLE field no record holds: its index is built for the new type and the old one dropped")
    func retypeIndexedField() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let indexed = Self.schema.replacingOccurrences(of: "mood STRING,", with: "mood STRING QUERYABLE,")
        #expect(try schemaCommand(["apply"], file: indexed, on: endpoint).succeeded)
        let retyped = try schemaCommand(["apply"], file: indexed.replacingOccurrences(of: "mood STRING QUERYABLE,", with: "mood INT64 QUERYABLE,"), on: endpoint)
        #expect(retyped.succeeded, "\(retyped.output)")
        #expect(retyped.output.contains("retype Fast.mood from STRING to INT64"), "\(retyped.output)")
        #expect(retyped.output.contains("dropping index"), "the STRING index went: \(retyped.output)")
        let registered = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("SELECT definition FROM canopy.schema_indexes WHERE record_type = 'Fast' AND field_name = 'mood'")
        }
        #expect(registered.count == 1 && registered[0]?.contains("number_field") == true, "\(registered)")
    }

    @Test("production apply is additive only: drops, retypes and removed indexes are refused, each named, nothing written")
    func productionApply() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        #expect(try schemaCommand(["apply"], file: Self.schema, on: endpoint, mode: "production").succeeded)
        let before = try schemaCommand(["export"], on: endpoint).output
        let shrunk = Self.schema
            .replacingOccurrences(of: "mood STRING,", with: "")
            .replacingOccurrences(of: "hours INT64 QUERYABLE SORTABLE,", with: "hours DOUBLE QUERYABLE SORTABLE,")
            .replacingOccurrences(of: "note STRING SEARCHABLE,", with: "note STRING, extra STRING,")
        let refused = try schemaCommand(["apply"], file: shrunk, on: endpoint, mode: "production")
        #expect(!refused.succeeded)
        for expected in [
            "refused: Fast.mood (STRING) would be dropped",
            "refused: Fast.hours would change from INT64 to DOUBLE",
            "refused: Fast.note would lose SEARCHABLE",
            "nothing was applied (production mode)",
        ] {
            #expect(refused.output.contains(expected), "\(expected)\n\(refused.output)")
        }
        #expect(try schemaCommand(["export"], on: endpoint).output == before, "nothing was written")
        let added = try schemaCommand(["apply"], file: Self.schema.replacingOccurrences(of: "mood STRING,", with: "mood STRING QUERYABLE, extra STRING,"), on: endpoint, mode: "production")
        #expect(added.succeeded, "adding is allowed: \(added.output)")
        let bad = try schemaCommand(["check"], file: "RECORD TYPE A (x STRING,\n  y FLOAT);", on: endpoint)
        #expect(!bad.succeeded)
        #expect(bad.output.contains(":2:5: error: unknown field type FLOAT"), "\(bad.output)")
    }

    @Test("production mode: saves and queries must fit the schema; each refusal names the field and what is missing")
    func productionMode() async throws {
        let harness = try await GatewayHarness.make()
        #expect(try schemaCommand(["apply"], file: Self.schema, on: harness.endpoint).succeeded)
        try await harness.test(schemaMode: "production") { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            _ = try await save(client, token: token, [fast("f1", hours: 16, end: 1_700_000_000_000), fast("f2", hours: 20, end: 1_700_000_100_000)])

            func saveError(_ record: [String: Any]) async throws -> (String, String) {
                let answer = try await client.call("modifyRecords", """
                    mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Fasting"}, save: $s) { saved { recordName } errors { recordName code message } } }
                    """, ["s": [record]], token: token)
                let error = (answer.object["errors"] as? [[String: Any]])?.first ?? [:]
                #expect((answer.object["saved"] as? [Any])?.isEmpty ?? true, "nothing saved: \(answer.body)")
                return (error["code"] as? String ?? "none", error["message"] as? String ?? "")
            }
            let unknownType = try await saveError(["recordName": "x", "recordType": "Diary", "fields": ["text": "hi"]])
            #expect(unknownType.0 == "INVALID_ARGUMENTS" && unknownType.1.contains("record type Diary is not in the schema"), "\(unknownType)")
            let unknownField = try await saveError(["recordName": "x", "recordType": "Fast", "fields": ["hours": 3, "color": "red"]])
            #expect(unknownField.0 == "INVALID_ARGUMENTS" && unknownField.1.contains("field color is not in record type Fast"), "\(unknownField)")
            let wrongType = try await saveError(["recordName": "x", "recordType": "Fast", "fields": ["hours": "three"]])
            #expect(wrongType.0 == "INVALID_ARGUMENTS" && wrongType.1.contains("hours"), "\(wrongType)")

            func query(_ arguments: String) async throws -> Answer {
                try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\"\(arguments)) { records { recordName } } }", token: token)
            }
            let mood = try await query(", filter: \"mood == 'calm'\"")
            #expect(mood.code == "INVALID_ARGUMENTS" && mood.message.contains("field mood of record type Fast is not QUERYABLE"), "\(mood.body)")
            let sortNote = try await query(", sort: [{field: \"note\"}]")
            #expect(sortNote.code == "INVALID_ARGUMENTS" && sortNote.message.contains("note of record type Fast is not SORTABLE"), "\(sortNote.body)")
            let modified = try await query(", sort: [{field: \"modificationDate\"}]")
            #expect(modified.code == "INVALID_ARGUMENTS" && modified.message.contains("modificationDate (___modTime) of record type Fast is not SORTABLE"), "\(modified.body)")

            // What the schema declares works.
            let ranged = try await query(", filter: \"hours > 10 AND endDate > 1\", sort: [{field: \"endDate\", direction: DESC}]")
            #expect(ranged.code == nil, "\(ranged.body)")
            #expect((ranged.object["records"] as? [[String: Any]])?.map { $0["recordName"] as? String } == ["f2", "f1"])
            let all = try await query("")
            #expect(all.code == nil, "___recordID QUERYABLE allows fetching all: \(all.body)")
            let words = try await query(", filter: \"self CONTAINS 'f2'\"")
            #expect((words.object["records"] as? [[String: Any]])?.count == 1, "\(words.body)")
            let created = try await query(", sort: [{field: \"creationDate\"}]")
            #expect(created.code == nil, "\(created.body)")
        }
        // Without ___recordID QUERYABLE a fetch-all is refused, as CloudKit refuses it.
        #expect(try schemaCommand(["apply"], file: Self.schema.replacingOccurrences(of: "REFERENCE QUERYABLE", with: "REFERENCE"), on: harness.endpoint).succeeded)
        try await harness.test(schemaMode: "production") { client in
            let all = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\") { records { recordName } } }", token: harness.aliceToken)
            #expect(all.code == "INVALID_ARGUMENTS" && all.message.contains("___recordID QUERYABLE"), "\(all.body)")
        }
        // The same saves in development mode create the type and field.
        try await harness.test { client in
            _ = try await save(client, token: harness.aliceToken, [["recordName": "d1", "recordType": "Diary", "fields": ["text": "hi"]]])
        }
    }
}
