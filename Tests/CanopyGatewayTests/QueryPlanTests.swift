import CanopyQuery
import CanopyStore
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
            let query = field.name == "records"
                ? try RecordsPlan(field, request: request, schema: schema, secret: SigningKey(Data(repeating: 1, count: 32))).query
                : try LookupPlan(field, request: request).query
            let plan = try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { connection in
                try await connection.asUser(owner.id) { connection in
                    try await connection.texts(PostgresQuery(unsafeSQL: "EXPLAIN " + query.sql, binds: query.binds)).compactMap { $0 }.joined(separator: "\n")
                }
            }
            #expect(!plan.contains("Seq Scan on records"), "\(document)\n\(plan)")
            #expect(plan.contains("Index Scan") || plan.contains("Index Only Scan") || plan.contains("Bitmap Index Scan"), "\(document)\n\(plan)")
        }
    }
}
