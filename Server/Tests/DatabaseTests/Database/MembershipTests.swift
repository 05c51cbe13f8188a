@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// canopy.memberships (migrations/0014) is what row-level security reads to
/// decide who reaches a zone; it is derived from zones and participants by
/// triggers. These tests change sharing in every way the gateway can, as
/// the gateway role, and after each step compare the table with the same
/// facts computed from zones, shares and participants.
@Suite("Memberships kept by triggers")
struct MembershipTests {
    /// The memberships as `user zone share role write` lines, read from the table.
    static let stored = """
        SELECT string_agg(concat_ws(' ', user_id, zone_id, coalesce(share_id::text, '-'), coalesce(root_record_id::text, '-'),
                          owner_id, role, can_write), E'\\n' ORDER BY user_id, zone_id, share_id NULLS FIRST, role)
          FROM canopy.memberships
        """
    /// The same, derived from zones, shares and participants here, not
    /// through the view the triggers use (canopy.membership_derivation).
    static let derived = """
        SELECT string_agg(concat_ws(' ', user_id, zone_id, coalesce(share_id::text, '-'), coalesce(root_record_id::text, '-'),
                          owner_id, role, can_write), E'\\n' ORDER BY user_id, zone_id, share_id NULLS FIRST, role)
          FROM (SELECT z.owner_id AS user_id, z.id AS zone_id, NULL::bigint AS share_id, NULL::bigint AS root_record_id,
                       z.owner_id, 'OWNER' AS role, true AS can_write
                  FROM canopy.zones z
                 WHERE z.owner_id <> 0   -- the public zone (migrations/0025, 0038): owner 0, no membership
                UNION ALL
                SELECT p.user_id, s.zone_id, s.id, s.root_record_id, z.owner_id, p.role, p.permission = 'READ_WRITE'
                  FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id JOIN canopy.zones z ON z.id = s.zone_id
                 WHERE p.status = 'ACCEPTED' AND p.user_id IS NOT NULL) m
        """

    /// A statement that failed, with PostgreSQL's message.
    struct Failure: Error, CustomStringConvertible {
        let statement: String
        let message: String
        let state: String?
        var description: String { "\(statement): \(message)" }
    }

    /// Runs statements in one committed transaction as `user` through the gateway role.
    @discardableResult
    func run(_ endpoint: DatabaseEndpoint, as user: Int64, _ statements: [String]) async throws -> [String?] {
        try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { connection in
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            do {
                try await connection.query("SELECT set_config('canopy.user_id', \(String(user)), true)", logger: TestDatabase.logger)
                var last: [String?] = []
                for statement in statements {
                    do {
                        last = try await connection.texts(PostgresQuery(unsafeSQL: statement))
                    } catch {
                        throw Failure(statement: statement, message: PostgresErrors.message(of: error), state: PostgresErrors.sqlState(of: error))
                    }
                }
                try await connection.query("COMMIT", logger: TestDatabase.logger)
                return last
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: TestDatabase.logger)
                throw error
            }
        }
    }

    /// The table and its derivation, read as the administrator.
    func tables(_ endpoint: DatabaseEndpoint) async throws -> (stored: String, derived: String) {
        try await TestDatabase.withConnection(endpoint) { connection in
            let stored = try await connection.texts(PostgresQuery(unsafeSQL: Self.stored))[0] ?? ""
            let derived = try await connection.texts(PostgresQuery(unsafeSQL: Self.derived))[0] ?? ""
            return (stored, derived)
        }
    }

    func expectInStep(_ endpoint: DatabaseEndpoint, _ step: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) async throws {
        let (stored, derived) = try await tables(endpoint)
        #expect(stored == derived, "after \(step):\nstored\n\(stored)\nderived\n\(derived)", sourceLocation: sourceLocation)
    }

    @Test("every way sharing changes keeps the memberships equal to what zones and participants say")
    func keptInStep() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        let (carol, _) = try await addUser("carol", email: "carol@example.com", on: endpoint)
        let (dave, _) = try await addUser("dave", on: endpoint)
        try await expectInStep(endpoint, "adding users (their default zones)")

        let zoneShare = try await run(endpoint, as: alice.id, [
            "INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Trips'), (\(alice.id), 'Notes')",
            "INSERT INTO canopy.shares (zone_id) SELECT id FROM canopy.zones WHERE name = 'Trips' RETURNING id::text",
        ])[0]!
        try await expectInStep(endpoint, "creating zones and a zone-wide share")

        try await run(endpoint, as: alice.id, [
            "INSERT INTO canopy.participants (share_id, user_id, permission) VALUES (\(zoneShare), \(bob.id), 'READ_ONLY')",
            "INSERT INTO canopy.participants (share_id, email, permission) VALUES (\(zoneShare), 'carol@example.com', 'READ_WRITE')",
        ])
        try await expectInStep(endpoint, "inviting (PENDING: no membership yet)")

        let url = try await run(endpoint, as: alice.id, ["SELECT url_token FROM canopy.shares WHERE id = \(zoneShare)"])[0]!
        try await run(endpoint, as: bob.id, ["SELECT canopy.accept_share('\(url)')"])
        try await run(endpoint, as: carol.id, ["SELECT canopy.accept_share('\(url)')"])
        try await expectInStep(endpoint, "accepting, by account and by an email invitation")
        #expect(try await run(endpoint, as: bob.id, ["SELECT count(*)::text FROM canopy.zones WHERE name = 'Trips'"]) == ["1"])

        try await run(endpoint, as: alice.id, ["UPDATE canopy.shares SET public_permission = 'READ_ONLY' WHERE id = \(zoneShare)"])
        try await run(endpoint, as: dave.id, ["SELECT canopy.accept_share('\(url)')"])
        try await expectInStep(endpoint, "joining by the public link")
        try await run(endpoint, as: alice.id, ["UPDATE canopy.shares SET public_permission = 'NONE' WHERE id = \(zoneShare)"])
        try await expectInStep(endpoint, "turning the public link off")
        #expect(try await run(endpoint, as: dave.id, ["SELECT count(*)::text FROM canopy.zones WHERE name = 'Trips'"]) == ["0"])

        try await run(endpoint, as: alice.id, [
            "UPDATE canopy.participants SET permission = 'READ_WRITE' WHERE user_id = \(bob.id)",
            "UPDATE canopy.participants SET role = 'ADMINISTRATOR' WHERE user_id = \(carol.id)",
        ])
        try await expectInStep(endpoint, "changing a permission and a role")

        try await run(endpoint, as: bob.id, ["UPDATE canopy.participants SET status = 'REMOVED' WHERE user_id = \(bob.id)"])
        try await expectInStep(endpoint, "leaving")
        #expect(try await run(endpoint, as: bob.id, ["SELECT count(*)::text FROM canopy.zones WHERE name = 'Trips'"]) == ["0"],
                "access ends with the next statement")

        let recordShare = try await run(endpoint, as: alice.id, [
            "INSERT INTO canopy.records (zone_id, record_name, record_type, fields) SELECT id, 'root', 'Note', '{}' FROM canopy.zones WHERE name = 'Notes'",
            "INSERT INTO canopy.records (zone_id, record_name, record_type, fields, parent_name) SELECT id, 'child', 'Note', '{}', 'root' FROM canopy.zones WHERE name = 'Notes'",
            "INSERT INTO canopy.shares (zone_id, root_record_id) SELECT zone_id, id FROM canopy.records WHERE record_name = 'root' RETURNING id::text",
        ])[0]!
        try await run(endpoint, as: alice.id, [
            "INSERT INTO canopy.participants (share_id, user_id, permission, status) VALUES (\(recordShare), \(dave.id), 'READ_WRITE', 'ACCEPTED')",
        ])
        try await expectInStep(endpoint, "a record-rooted share accepted")
        #expect(try await run(endpoint, as: dave.id, ["SELECT string_agg(record_name, ',' ORDER BY record_name) FROM canopy.records"]) == ["child,root"])

        try await run(endpoint, as: alice.id, ["DELETE FROM canopy.participants WHERE user_id = \(dave.id)"])
        try await expectInStep(endpoint, "removing a participant's row")
        #expect(try await run(endpoint, as: dave.id, ["SELECT count(*)::text FROM canopy.records"]) == ["0"])

        try await run(endpoint, as: alice.id, [
            "INSERT INTO canopy.participants (share_id, user_id, permission, status) VALUES (\(recordShare), \(dave.id), 'READ_ONLY', 'ACCEPTED')",
            "DELETE FROM canopy.shares WHERE id = \(recordShare)",
        ])
        try await expectInStep(endpoint, "deleting a share")

        try await run(endpoint, as: alice.id, ["DELETE FROM canopy.zones WHERE name = 'Trips'"])
        try await expectInStep(endpoint, "deleting a shared zone")

        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "DELETE FROM canopy.users WHERE id = \(carol.id)"), logger: TestDatabase.logger)
        }
        try await expectInStep(endpoint, "deleting a user")
    }

    @Test("rebuild_memberships makes the table anew from zones and participants loaded with triggers off")
    func rebuild() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            try await connection.query("SET LOCAL session_replication_role = replica", logger: TestDatabase.logger)
            try await connection.query(PostgresQuery(unsafeSQL: """
                WITH z AS (INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Loaded') RETURNING id, owner_id),
                     s AS (INSERT INTO canopy.shares (zone_id, owner_id) SELECT id, owner_id FROM z RETURNING id, owner_id)
                INSERT INTO canopy.participants (share_id, owner_id, user_id, role, permission, status)
                SELECT s.id, s.owner_id, u.id, u.role, 'READ_WRITE', 'ACCEPTED'
                  FROM s, (VALUES (\(alice.id)::bigint, 'OWNER'), (\(bob.id)::bigint, 'PRIVATE_USER')) u(id, role)
                """), logger: TestDatabase.logger)
            try await connection.query("COMMIT", logger: TestDatabase.logger)
        }
        #expect(try await run(endpoint, as: bob.id, ["SELECT count(*)::text FROM canopy.zones WHERE name = 'Loaded'"]) == ["0"],
                "rows loaded with triggers off give no access until the memberships are rebuilt")
        let (before, _) = try await tables(endpoint)
        let rows = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("SELECT canopy.rebuild_memberships()::text")[0]
        }
        try await expectInStep(endpoint, "rebuild_memberships()")
        let (after, _) = try await tables(endpoint)
        #expect(after != before)
        #expect(rows == String(after.split(separator: "\n").count))
        #expect(try await run(endpoint, as: bob.id, ["SELECT count(*)::text FROM canopy.zones WHERE name = 'Loaded'"]) == ["1"])
        do {
            try await run(endpoint, as: bob.id, ["SELECT canopy.rebuild_memberships()"])
            Issue.record("the gateway rebuilt the memberships")
        } catch {
            #expect((error as? Failure)?.state == "42501", "\(error)")
        }
    }
}
