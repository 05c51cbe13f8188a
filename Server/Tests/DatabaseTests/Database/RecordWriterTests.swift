@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// A record's writers (`created_by`, `modified_by`) are users: checked once
/// per statement since issue 51 (migrations/0031), where two foreign keys
/// checked each row. What the foreign keys guaranteed still holds: a write
/// naming no user fails with their SQLSTATE, a user cannot be deleted under
/// a write that names them, and deleting a user leaves their records with no
/// writer (`ON DELETE SET NULL`).
@Suite("Records' writers")
struct RecordWriterTests {
    /// Runs `statements` in one transaction as the gateway acting for `user`.
    static func run(_ endpoint: DatabaseEndpoint, as user: Int64, _ statements: [String]) async throws -> [String?] {
        try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { connection in
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            try await connection.query("SELECT set_config('canopy.user_id', \(String(user)), true)", logger: TestDatabase.logger)
            var last: [String?] = []
            for statement in statements {
                do {
                    last = try await connection.texts(PostgresQuery(unsafeSQL: statement))
                } catch {
                    throw Failure(statement: statement, message: PostgresErrors.message(of: error))
                }
            }
            try await connection.query("COMMIT", logger: TestDatabase.logger)
            return last
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let statement: String
        let message: String
        var description: String { "\(statement): \(message)" }
    }

    /// Deletes a user as the administrator does.
    static func deleteUser(_ endpoint: DatabaseEndpoint, _ id: Int64) async throws {
        try await TestDatabase.withConnection(endpoint) { connection in
            do {
                _ = try await connection.query(PostgresQuery(unsafeSQL: "DELETE FROM canopy.users WHERE id = \(id)"), logger: TestDatabase.logger)
            } catch {
                throw Failure(statement: "DELETE FROM canopy.users", message: PostgresErrors.message(of: error))
            }
        }
    }

    static func writers(_ endpoint: DatabaseEndpoint, _ name: String) async throws -> String? {
        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT coalesce(created_by::text, '-') || ',' || coalesce(modified_by::text, '-') FROM canopy.records WHERE record_name = '\(name)'
                """)).first ?? nil
        }
    }

    @Test("deleting a user leaves the records they wrote in others' zones with no writer; the others' records keep theirs")
    func deletedWriter() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        let share = try await Self.run(endpoint, as: alice.id, [
            "INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Team')",
            "INSERT INTO canopy.records (zone_id, record_name, record_type) SELECT id, 'hers', 'Note' FROM canopy.zones WHERE name = 'Team'",
            "INSERT INTO canopy.shares (zone_id) SELECT id FROM canopy.zones WHERE name = 'Team' RETURNING id::text",
        ])[0]!
        _ = try await Self.run(endpoint, as: alice.id, [
            "INSERT INTO canopy.participants (share_id, user_id, permission, status) VALUES (\(share), \(bob.id), 'READ_WRITE', 'ACCEPTED')",
        ])
        _ = try await Self.run(endpoint, as: bob.id, [
            "INSERT INTO canopy.records (zone_id, record_name, record_type) SELECT id, 'his', 'Note' FROM canopy.zones WHERE name = 'Team'",
            "UPDATE canopy.records SET fields = '{\"n\": 1}' WHERE record_name = 'hers'",
        ])
        #expect(try await Self.writers(endpoint, "his") == "\(bob.id),\(bob.id)")
        #expect(try await Self.writers(endpoint, "hers") == "\(alice.id),\(bob.id)")

        try await Self.deleteUser(endpoint, bob.id)
        #expect(try await Self.writers(endpoint, "his") == "-,-", "his record stays, with no writer")
        #expect(try await Self.writers(endpoint, "hers") == "\(alice.id),-", "her record keeps its creator")
    }

    @Test("a write naming no user fails as the foreign key failed (23503)")
    func unknownWriter() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        // As the tables' owner (past row-level security, which would refuse
        // an unknown caller first), naming a user who does not exist.
        let state = try await TestDatabase.withConnection(endpoint) { connection -> String? in
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            try await connection.query("SET LOCAL ROLE canopy_owner", logger: TestDatabase.logger)
            try await connection.query("SELECT set_config('canopy.user_id', '987654321', true)", logger: TestDatabase.logger)
            do {
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO canopy.records (zone_id, record_name, record_type)
                    SELECT id, 'ghost', 'Note' FROM canopy.zones WHERE owner_id = \(alice.id)
                    """), logger: TestDatabase.logger)
                try await connection.query("ROLLBACK", logger: TestDatabase.logger)
                return nil
            } catch {
                try await connection.query("ROLLBACK", logger: TestDatabase.logger)
                return PostgresErrors.sqlState(of: error)
            }
        }
        #expect(state == "23503")
    }

    @Test("a user's deletion waits for their uncommitted write in another's zone, then clears its writers")
    func deletionWaitsForWrite() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        // Bob's zone, shared with Alice: nothing of hers but her user row
        // is locked by her write (her own zones go with her).
        let share = try await Self.run(endpoint, as: bob.id, [
            "INSERT INTO canopy.zones (owner_id, name) VALUES (\(bob.id), 'Shared')",
            "INSERT INTO canopy.shares (zone_id) SELECT id FROM canopy.zones WHERE name = 'Shared' RETURNING id::text",
        ])[0]!
        _ = try await Self.run(endpoint, as: bob.id, [
            "INSERT INTO canopy.participants (share_id, user_id, permission, status) VALUES (\(share), \(alice.id), 'READ_WRITE', 'ACCEPTED')",
        ])
        try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { writer in
            try await writer.query("BEGIN", logger: TestDatabase.logger)
            try await writer.query("SELECT set_config('canopy.user_id', \(String(alice.id)), true)", logger: TestDatabase.logger)
            try await writer.query(PostgresQuery(unsafeSQL: """
                INSERT INTO canopy.records (zone_id, record_name, record_type) SELECT id, 'pending', 'Note' FROM canopy.zones WHERE name = 'Shared'
                """), logger: TestDatabase.logger)
            // The write is not committed; the deletion starts and must wait.
            let deletion = Task {
                try await Self.deleteUser(endpoint, alice.id)
            }
            var waiting = false
            let deadline = Date().addingTimeInterval(60)
            while !waiting && Date() < deadline {
                waiting = try await TestDatabase.withConnection(endpoint) { connection in
                    try await connection.texts("SELECT count(*)::text FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM canopy.users%'").first == "1"
                }
                if !waiting { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(waiting, "the deletion waits on the write's lock on the user")
            try await writer.query("COMMIT", logger: TestDatabase.logger)
            try await deletion.value
        }
        #expect(try await Self.writers(endpoint, "pending") == "-,-", "the committed record no longer names the deleted writer")
    }
}
