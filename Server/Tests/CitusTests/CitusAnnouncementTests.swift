@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyPlanner
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// A write's changes announced from the coordinator (issue 67, DECISIONS
/// 163 and 172): on distributed tables the records' triggers run on the
/// workers, which do not NOTIFY; each write transaction of the gateway ends
/// with `canopy.announce_changes` for the owners its statements name, and
/// the gateway's listener hears the zone.
@Suite("Citus: a write's changes are announced from the coordinator", .serialized)
struct CitusAnnouncementTests {
    static let fixture = FixtureBox(onCitus: true, distributed: true)

    /// Saves a new record in `zone` through the gateway's write path
    /// (`RequestDatabase.withUser`, the planner's modifyRecords statement)
    /// until the listener is offered `expected`; false after `timeout` (the
    /// listener may still be connecting when the first is announced).
    static func writeUntilHeard(
        _ expected: ChangeNotifier.Event, zone: String, as userID: Int64, database: RequestDatabase,
        seen: CitusNotificationTests.Seen, timeout: Duration = .seconds(30)
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        var saved = 0
        while ContinuousClock.now < deadline {
            saved += 1
            let document = "mutation { modifyRecords(\(zone), save: [{recordName: \"heard\(userID)-\(saved)\", recordType: \"Entry\", fields: {}}]) { saved { recordName } } }"
            let statement = try ZoneReference.$namedOwners.withValue(.routed) {
                let request = try ParsedRequest(query: document)
                return try ModifyRecordsPlan(try request.rootFields()[0], request: request).writeQuery
            }
            let answer = try await database.withUser(userID, logger: TestDatabase.logger) { connection in
                try await connection.execute(statement, as: userID, logger: TestDatabase.logger)
                    .map { try $0.map(CitusRoutingTests.text).joined(separator: "|") }.joined(separator: "\n")
            }
            #expect(answer.contains(#""errors": []"#), "\(answer)")
            let found = await eventually(timeout: .milliseconds(500)) {
                seen.events.withLock { $0.contains(expected) }
            }
            if found { return true }
        }
        return false
    }

    @Test("the owner's write to their zone and a writer's to the owner's shared zone are heard, from the coordinator")
    func writesAreAnnounced() async throws {
        let fixture = try await Self.fixture.get()
        let alice = fixture.ids["alice"]!, writer = fixture.ids["writer"]!
        let (log, aliceName) = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            let zone = try await connection.texts("SELECT id::text FROM canopy.zones WHERE owner_id = \(alice) AND name = 'Log'")
            let name = try await connection.texts("SELECT record_name FROM canopy.users WHERE id = \(alice)")
            return (Int64(zone.first.flatMap { $0 } ?? "") ?? -1, name.first.flatMap { $0 } ?? "")
        }
        try await CitusNotificationTests.withListener(fixture.endpoint) { database, seen in
            let owners = try await Self.writeUntilHeard(
                .zone(id: log, owner: alice), zone: #"scope: PRIVATE, zone: {zoneName: "Log"}"#, as: alice, database: database, seen: seen
            )
            #expect(owners, "the owner's save in Log, announced")
            seen.events.withLock { $0.removeAll() }
            let writers = try await Self.writeUntilHeard(
                .zone(id: log, owner: alice), zone: #"scope: SHARED, zone: {zoneName: "Log", ownerName: "\#(aliceName)"}"#, as: writer,
                database: database, seen: seen
            )
            #expect(writers, "the writer's save in the owner's Log, named by the owner's name, announced")
        }
    }
    /// A zone deleted: its row is gone when the coordinator looks, so its
    /// owner's departure from it carries the transaction's stamp
    /// (migrations/0048, DECISIONS 186). Before, its listeners learnt of it
    /// only at their heartbeat.
    @Test("a zone its owner deletes is announced from the coordinator, though its row is gone")
    func deletedZoneIsAnnounced() async throws {
        let fixture = try await Self.fixture.get()
        let alice = fixture.ids["alice"]!
        let run: @Sendable (String, RequestDatabase) async throws -> String = { document, database in
            let statement = try ZoneReference.$namedOwners.withValue(.routed) { try CitusRoutingTests.statement(document, userID: alice) }
            return try await database.withUser(alice, logger: TestDatabase.logger) { connection in
                try await connection.execute(statement, as: alice, logger: TestDatabase.logger)
                    .map { try $0.map(CitusRoutingTests.text).joined(separator: "|") }.joined(separator: "\n")
            }
        }
        try await CitusNotificationTests.withListener(fixture.endpoint) { database, seen in
            _ = try await run(#"mutation { saveZone(zoneName: "Gone") { zoneName } }"#, database)
            let gone = try await TestDatabase.withConnection(fixture.endpoint) { connection in
                Int64(try await connection.texts("SELECT id::text FROM canopy.zones WHERE owner_id = \(alice) AND name = 'Gone'").first.flatMap { $0 } ?? "") ?? -1
            }
            // Listening: the zone's own write is heard first.
            let listening = try await Self.writeUntilHeard(
                .zone(id: gone, owner: alice), zone: #"scope: PRIVATE, zone: {zoneName: "Gone"}"#, as: alice, database: database, seen: seen
            )
            #expect(listening, "the listener hears a save in Gone")
            seen.events.withLock { $0.removeAll() }
            let deleted = try await run(#"mutation { deleteZone(scope: PRIVATE, zone: {zoneName: "Gone"}) }"#, database)
            #expect(deleted == "1", "the zone deleted: \(deleted)")
            let heard = await eventually(timeout: .seconds(30)) {
                seen.events.withLock { $0.contains(.zone(id: gone, owner: alice)) }
            }
            #expect(heard, "Gone's deletion announced")
        }
    }
}
