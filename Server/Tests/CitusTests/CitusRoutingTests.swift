@testable import CanopyGatewayTestSupport
import CanopyGateway
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
        case "zoneRanges": return try ZoneRangesPlan(field, request: request, userID: userID).statement
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
        // The zone's position and its cuts (one range: the zone is small).
        (#"{ zoneRanges(scope: PRIVATE, zone: {zoneName: "Log"}, count: 4) { position ranges } }"#, "|{}|"),
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
            let planned = try ZoneReference.$namedOwners.withValue(.routed) {
                try Self.statement(document, userID: userID)
            }
            let (plan, rows) = try await explained {
                try await TestDatabase.withConnection(fixture.gateway) { connection in
                    try await connection.asUser(userID, actAs: true) { connection in
                        // The owners' ids and the caller's, as the gateway binds them.
                        let statement = try await connection.binding(planned, as: userID, logger: TestDatabase.logger)
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
            // A record's share and its participants, found by the owner's id
            // bound, not by the record's column (DECISIONS 176).
            ("{ lookup(scope: SHARED, \(zone), recordNames: [\"log1\", \"none\"]) { record { recordName share { rootRecordName participants { role } } } } }", "log1"),
            ("{ records(scope: SHARED, \(zone), recordType: \"Entry\", limit: 50) { records { recordName share { url } } } }", "log1"),
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

    /// The sharing mutations as the gateway runs them (``ShareMutationRun``:
    /// locate, change, read back), each in a transaction acting for
    /// `userID` and rolled back, with the coordinator refusing any statement
    /// of more than one task (`citus.multi_task_query_log_level`, set on the
    /// coordinator only: `set_config` is not carried to the workers), the
    /// statements the share functions run inside them included
    /// (DECISIONS 170). Returns each plan's answer.
    static func runShareMutations(_ documents: [String], as userID: Int64, in fixture: PermissionFixture) async throws -> [String] {
        try await ZoneReference.$namedOwners.withValue(.routed) {
            try await TestDatabase.withConnection(fixture.gateway) { connection in
                try await connection.asUser(userID, actAs: true) { connection in
                    _ = try await connection.texts("SELECT set_config('citus.multi_task_query_log_level', 'error', true)")
                    var answers: [String] = []
                    for document in documents {
                        let request = try ParsedRequest(query: document)
                        let plan = try ShareMutationPlan(try request.rootFields()[0], request: request)
                        func run(_ statement: SQLStatement) async throws -> PostgresRowSequence {
                            let bound = try await connection.binding(statement, as: userID, logger: TestDatabase.logger)
                            return try await connection.query(bound.postgresQuery, logger: TestDatabase.logger)
                        }
                        var located: LocatedShare?
                        for try await row in try await run(plan.target.locate) { located = try ShareTarget.decodeLocated(row) }
                        guard let located else { throw FixtureError(message: "\(document): no zone") }
                        var changed: Int64?
                        for try await row in try await run(plan.change(located)) { changed = try ShareMutationPlan.decodeChanged(row) }
                        // As ShareMutationRun reads back: saveShare's answer, else the share located.
                        let readBack: Int64? = if case .save = plan.action { changed } else { located.shareID }
                        guard let shareID = readBack, plan.action != .delete, plan.action != .leave else {
                            answers.append("\(changed ?? -1)")
                            continue
                        }
                        for try await row in try await run(try plan.response(shareID: shareID, ownerID: located.ownerID)) {
                            answers.append(try row.decode(String?.self) ?? "null")
                        }
                    }
                    return answers
                }
            }
        }
    }

    @Test("the owner's sharing mutations, and a participant's, each statement one task: saveShare, setParticipant, removeParticipant, deleteShare, leaveShare")
    func sharingMutationsAreOneTaskEach() async throws {
        do { try await sharingMutations() } catch { Issue.record("\(String(reflecting: error))") }
    }

    func sharingMutations() async throws {
        let fixture = try await Self.fixture.get()
        let owner = try await Self.runShareMutations([
            #"mutation { saveShare(zoneName: "Log", title: "Logbook", participants: [{email: "pat@example.org", permission: READ_ONLY}]) { title participants { email } } }"#,
            #"mutation { setParticipant(zoneName: "Log", participant: {email: "pat@example.org", permission: READ_WRITE}) { participants { email permission } } }"#,
            #"mutation { removeParticipant(zoneName: "Log", email: "pat@example.org") { participants { email } } }"#,
            #"mutation { deleteShare(zoneName: "Log") }"#,
        ], as: fixture.ids["alice"]!, in: fixture)
        #expect(owner.count == 4)
        #expect(owner.first?.contains("Logbook") == true && owner.first?.contains("pat@example.org") == true, "\(owner)")
        #expect(owner.dropFirst().first?.contains("READ_WRITE") == true, "\(owner)")
        #expect(owner.dropFirst(2).first.map { !$0.contains("pat@example.org") } == true, "\(owner)")
        #expect(owner.last == "1", "deleteShare deleted \(owner.last ?? "nothing")")

        let aliceName = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: "SELECT record_name FROM canopy.users WHERE id = \(fixture.ids["alice"]!)")).compactMap { $0 }
        }.first ?? ""
        let left = try await Self.runShareMutations(
            [#"mutation { leaveShare(zone: {zoneName: "Log", ownerName: "\#(aliceName)"}) }"#], as: fixture.ids["reader"]!, in: fixture
        )
        #expect(left == ["1"], "the reader left \(left) shares")
    }

    /// A share found by its URL token (`canopy.share_view`, the
    /// `shareMetadata` and `acceptShare` path): the token's owner and share
    /// first, from the reference table, then one task on the owner's shard.
    @Test("a share by its URL: its view and accepting it, each statement one task")
    func shareByTokenIsOneTaskEach() async throws {
        do { try await shareByToken() } catch { Issue.record("\(String(reflecting: error))") }
    }

    func shareByToken() async throws {
        let fixture = try await Self.fixture.get()
        let token = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT t.url_token FROM canopy.share_tokens t JOIN canopy.shares s ON s.owner_id = t.owner_id AND s.id = t.share_id \
                WHERE s.public_permission = 'READ_ONLY' AND s.root_record_id IS NULL AND s.owner_id = \(fixture.ids["alice"]!)
                """)).compactMap { $0 }
        }.first ?? ""
        #expect(!token.isEmpty, "the fixture's public share of Log has a token")
        let answers = try await TestDatabase.withConnection(fixture.gateway) { connection in
            try await connection.asUser(fixture.ids["bob"]!, actAs: true) { connection in
                _ = try await connection.texts("SELECT set_config('citus.multi_task_query_log_level', 'error', true)")
                let view = try await connection.texts("SELECT permission || '|' || may_open::text FROM canopy.share_view(\(token))")
                let accepted = try await connection.texts("SELECT canopy.accept_share(\(token))::text")
                return (view + accepted).compactMap { $0 }
            }
        }
        #expect(answers.count == 2 && answers.first == "READ_ONLY|true", "\(answers)")
    }

    /// `moveRecords` as the gateway runs it (``MoveRecordsOperation``:
    /// locate both zones, then move), acting for `userID`, with the
    /// coordinator refusing any statement of more than one task; `setUp`
    /// runs first, in the same transaction (rolled back).
    static func move(
        _ document: String, as userID: Int64, in fixture: PermissionFixture,
        setUp: @Sendable (PostgresConnection) async throws -> Void = { _ in }
    ) async throws -> String {
        try await TestDatabase.withConnection(fixture.gateway) { connection in
            try await connection.asUser(userID, actAs: true) { connection in
                try await setUp(connection)
                _ = try await connection.texts("SELECT set_config('citus.multi_task_query_log_level', 'error', true)")
                let request = try ParsedRequest(query: document)
                let plan = try MoveRecordsPlan(try request.rootFields()[0], request: request)
                func run(_ statement: SQLStatement) async throws -> PostgresRowSequence {
                    let bound = try await connection.binding(statement, as: userID, logger: TestDatabase.logger)
                    return try await connection.query(bound.postgresQuery, logger: TestDatabase.logger)
                }
                var located: (from: MoveRecordsPlan.LocatedZone?, to: MoveRecordsPlan.LocatedZone?) = (nil, nil)
                for try await row in try await run(plan.locate) { located = try MoveRecordsPlan.decodeLocated(row) }
                guard let source = located.from, let target = located.to else { throw FixtureError(message: "\(document): no zone") }
                var answer = ""
                for try await row in try await run(try plan.move(from: source, to: target)) { answer = try row.decode(String?.self) ?? "null" }
                return answer
            }
        }
    }

    @Test("moveRecords between two zones of the owner: each statement one task; between two owners' zones, refused on Citus")
    func movingRecords() async throws {
        let fixture = try await Self.fixture.get()
        let alice = fixture.ids["alice"]!, writer = fixture.ids["writer"]!
        do {
            let moved = try await ZoneReference.$namedOwners.withValue(.routed) {
                try await Self.move(#"mutation { moveRecords(from: {zoneName: "Family"}, to: {zoneName: "Log"}, recordNames: ["private"]) { moved errors { code } } }"#,
                                    as: alice, in: fixture)
            }
            #expect(moved.contains(#""private""#) && moved.contains(#""errors" : []"#), "\(moved)")
        } catch {
            Issue.record("\(String(reflecting: error))")
        }
        // The writer's own zone into the owner's shared zone: two owners' shards.
        let aliceName = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: "SELECT record_name FROM canopy.users WHERE id = \(alice)")).compactMap { $0 }
        }.first ?? ""
        do {
            _ = try await ZoneReference.$namedOwners.withValue(.routed) {
                try await Self.move(
                    #"mutation { moveRecords(from: {zoneName: "Mine"}, to: {zoneName: "Log", ownerName: "\#(aliceName)"}, recordNames: ["m1"]) { moved } }"#,
                    as: writer, in: fixture) { connection in
                        // VALUES, as the gateway inserts (Citus refuses INSERT … SELECT under row-level security).
                        let zone = try await connection.texts(PostgresQuery(unsafeSQL: "INSERT INTO canopy.zones (owner_id, name) VALUES (\(writer), 'Mine') RETURNING id::text"))
                        _ = try await connection.texts(PostgresQuery(unsafeSQL: """
                            INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type) VALUES (\(zone.first.flatMap { $0 } ?? "0"), \(writer), 'm1', 'Entry')
                            """))
                    }
            }
            Issue.record("a move between two owners' zones was not refused")
        } catch let error as PSQLError {
            #expect(error.serverInfo?[.sqlState] == "CN004" && error.serverInfo?[.message]?.contains("one owner") == true, "\(String(reflecting: error))")
        }
    }

    /// A cell as text, whatever its type.
    static func text(_ cell: PostgresCell) throws -> String {
        switch cell.dataType {
        case .bool: try cell.decode(Bool?.self).map { $0 ? "t" : "f" } ?? "NULL"
        case .int4: try cell.decode(Int32?.self).map(String.init) ?? "NULL"
        case .int8: try cell.decode(Int64?.self).map(String.init) ?? "NULL"
        case .int8Array: try cell.decode([Int64]?.self).map { "{" + $0.map(String.init).joined(separator: ",") + "}" } ?? "NULL"
        default: try cell.decode(String?.self) ?? "NULL"
        }
    }
}
