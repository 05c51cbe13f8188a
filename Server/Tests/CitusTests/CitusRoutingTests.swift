@testable import CanopyGatewayTestSupport
import CanopyPlanner
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// The gateway's per-zone statements on distributed tables (issue 67's
/// "every per-zone statement the gateway sends routes to one shard"): each
/// is made by the planner as the gateway makes it, its caller bound as the
/// gateway binds them (``SQLBuilder/caller()``, DECISIONS 168), and
/// explained as the gateway acting for the zone's owner. Every distributed
/// step of its plan must be one task.
@Suite("Citus: the gateway's per-zone statements route to one shard", .serialized)
struct CitusRoutingTests {
    static let fixture = FixtureBox(onCitus: true, distributed: true)
    static let secret = SigningKey(Data(repeating: 5, count: 32))

    /// The planner's statement for one GraphQL field, as the gateway runs it.
    static func statement(_ document: String, userID: Int64) throws -> SQLStatement {
        // Web Services' changes/zone: every zone of the caller's with its position.
        if document == Self.zonesWithPositions { return ZoneSyncTokensPlan(scope: .private, userID: userID).statement }
        let request = try ParsedRequest(query: document)
        let field = try request.rootFields()[0]
        switch field.name {
        case "records": return try RecordsPlan(field, request: request, schema: [:], secret: secret).statement
        case "lookup": return try LookupPlan(field, request: request).statement
        case "zones": return try ZonesPlan(field, request: request).statement
        case "zoneChanges": return try ZoneChangesPlan(field, request: request, userID: userID, secret: secret).statement
        case "saveZone": return try SaveZonePlan(field, request: request).statement
        case "deleteZone": return try DeleteZonePlan(field, request: request).statement
        case "modifyRecords": return try ModifyRecordsPlan(field, request: request).writeQuery
        default: throw FixtureError(message: "no plan for \(field.name)")
        }
    }

    static let zonesWithPositions = "Web Services' changes/zone"

    /// The owner's per-zone statements, reads and writes, each with a text
    /// its answer must hold (the writes run too, rolled back).
    static let ownersStatements: [(document: String, answer: String)] = [
        (#"{ records(scope: PRIVATE, zone: {zoneName: "Log"}, recordType: "Entry", limit: 50) { records { recordName } cursor } }"#, "log1"),
        (#"{ lookup(scope: PRIVATE, zone: {zoneName: "Log"}, recordNames: ["log1", "none"]) { record { recordName } } }"#, "log1"),
        (#"{ zones(scope: PRIVATE) { zoneName } }"#, "Family"),
        (zonesWithPositions, "Log"),
        (#"{ records(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, recordType: "Entry", limit: 50) { records { recordName } } }"#, "t|[]"),
        (#"{ zoneChanges(scope: PRIVATE, zone: {zoneName: "Log"}) { changed { recordName } deleted { recordName } } }"#, "log1"),
        (#"mutation { saveZone(zoneName: "Log") { zoneName } }"#, "Log"),
        (#"mutation { deleteZone(scope: PRIVATE, zone: {zoneName: "Log"}) }"#, "1"),
        (#"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "Log"}, save: [{recordName: "log2", recordType: "Entry", fields: {}}]) { saved { recordName } } }"#, #""errors": []"#),
        (#"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "Log"}, save: [{recordName: "log3", recordType: "Entry", fields: {}}, {recordName: "log4", recordType: "Entry", fields: {}}]) { saved { recordName } } }"#, #""errors": []"#),
        (#"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "Log"}, delete: ["log1"]) { deleted } }"#, #""deleted": ["log1"]"#),
    ]

    /// Explains and runs `document`'s statement as the gateway acting for
    /// `userID` (rolled back): every distributed step of its plan must be
    /// one task, and its answer must hold `answer`.
    static func expectOneTask(_ document: String, answer: String, as userID: Int64, in fixture: PermissionFixture) async {
        do {
            // Planned as the gateway plans on Citus (OwnerRoutingMiddleware).
            let statement = try ZoneReference.$namedOwners.withValue(.routed) {
                try Self.statement(document, userID: userID).bindingCaller(userID)
            }
            let (plan, rows) = try await explained {
                try await TestDatabase.withConnection(fixture.gateway) { connection in
                    try await connection.asUser(userID, actAs: true) { connection in
                        let plan = try await connection.texts(PostgresQuery(unsafeSQL: "EXPLAIN " + statement.sql, binds: statement.binds)).compactMap { $0 }
                        var rows: [String] = []
                        for try await row in try await connection.query(statement.postgresQuery, logger: TestDatabase.logger) {
                            rows.append(try row.map(Self.text).joined(separator: "|"))
                        }
                        return (plan, rows.joined(separator: "\n"))
                    }
                }
            }
            let counts = plan.filter { $0.contains("Task Count:") }
            #expect(!counts.isEmpty && counts.allSatisfy { $0.hasSuffix("Task Count: 1") }, "\(document)\n\(plan.joined(separator: "\n"))")
            #expect(rows.contains(answer), "\(document): \(rows)")
        } catch {
            Issue.record("\(document) failed: \(error)")
        }
    }

    @Test("the owner's statements of their zone: records, lookup, zones, zone changes, sync tokens, the public zone's records, saving and deleting the zone, modifying records")
    func ownersStatementsAreOneTask() async throws {
        let fixture = try await Self.fixture.get()
        for (document, answer) in Self.ownersStatements {
            await Self.expectOneTask(document, answer: answer, as: fixture.ids["alice"]!, in: fixture)
        }
    }

    /// A zone named by its owner's record name (`canopy.owner_id_named`,
    /// DECISIONS 169): a participant's statements of a zone shared with them.
    @Test("a participant's statements of a shared zone, named by its owner: records, lookup, zone changes, modifying records")
    func participantsStatementsAreOneTask() async throws {
        let fixture = try await Self.fixture.get()
        let alice = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: "SELECT record_name FROM canopy.users WHERE id = \(fixture.ids["alice"]!)")).compactMap { $0 }
        }.first ?? ""
        let zone = #"zone: {zoneName: "Log", ownerName: "\#(alice)"}"#
        let reads: [(String, String)] = [
            ("{ records(scope: SHARED, \(zone), recordType: \"Entry\", limit: 50) { records { recordName } cursor } }", "log1"),
            ("{ lookup(scope: SHARED, \(zone), recordNames: [\"log1\"]) { record { recordName } } }", "log1"),
            ("{ zoneChanges(scope: SHARED, \(zone)) { changed { recordName } } }", "log1"),
        ]
        for (document, answer) in reads {
            await Self.expectOneTask(document, answer: answer, as: fixture.ids["reader"]!, in: fixture)
        }
        await Self.expectOneTask(
            "mutation { modifyRecords(scope: SHARED, \(zone), save: [{recordName: \"w1\", recordType: \"Entry\", fields: {}}]) { saved { recordName } } }",
            answer: #""errors": []"#, as: fixture.ids["writer"]!, in: fixture
        )
    }

    /// A cell as text, whatever its type.
    static func text(_ cell: PostgresCell) throws -> String {
        switch cell.dataType {
        case .bool: try cell.decode(Bool?.self).map { $0 ? "t" : "f" } ?? "NULL"
        case .int4: try cell.decode(Int32?.self).map(String.init) ?? "NULL"
        case .int8: try cell.decode(Int64?.self).map(String.init) ?? "NULL"
        default: try cell.decode(String?.self) ?? "NULL"
        }
    }
}
