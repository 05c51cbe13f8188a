@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// The public database's grants (docs/API.md §15), enforced by row-level
/// security: ``PublicGrantTable``'s who × privilege × record type, every
/// cell run as `canopy_gateway` with the identity set as the gateway sets
/// it. Here every record is `creator`'s, so `Flag`'s cells are checked
/// against the table with `creator` as the records' creator (no `Flag`
/// grant names _creator, so the answers are the same).
struct PublicDatabaseFixture: Sendable {
    let endpoint: DatabaseEndpoint
    let ids: [String: Int64]

    static let users = PublicGrantTable.users
    static let types = PublicGrantTable.types

    static func make() async throws -> PublicDatabaseFixture {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        var ids: [String: Int64] = [:]
        for name in users {
            let (user, _) = try await addUser(name, on: endpoint)
            ids[name] = user.id
        }
        let snapshot = ids
        try await TestDatabase.withConnection(endpoint) { connection in
            func run(_ sql: String) async throws {
                try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
            }
            try await run("""
                INSERT INTO canopy.record_type_grants (record_type, privilege, role_name, position) VALUES
                    ('Member', 'READ', '_icloud', 0), ('Member', 'CREATE', '_icloud', 0), ('Member', 'WRITE', '_creator', 1),
                    ('Flag', 'READ', '_world', 0), ('Flag', 'CREATE', 'Moderator', 1), ('Flag', 'WRITE', 'Moderator', 1),
                    ('Secret', 'READ', '_creator', 0), ('Secret', 'WRITE', '_creator', 0), ('Secret', 'CREATE', '_icloud', 1)
                """)
            try await run("INSERT INTO canopy.security_roles (name) VALUES ('Moderator'), ('Editor')")
            try await run("INSERT INTO canopy.role_members (role_name, user_id) VALUES ('Moderator', \(snapshot["moderator"]!)), ('Editor', \(snapshot["editor"]!))")
            try await run("SELECT set_config('canopy.user_id', '\(snapshot["creator"]!)', false)")
            try await run("""
                INSERT INTO canopy.records (zone_id, record_name, record_type)
                SELECT z.id, t.type || n.n, t.type FROM canopy.zones z,
                       unnest(ARRAY['Post', 'Member', 'Flag', 'Secret']) t(type), unnest(ARRAY['1', 'gone']) n(n)
                 WHERE z.owner_id = 0
                """)
            try await run("DELETE FROM canopy.records WHERE record_name LIKE '%gone'")
            try await run("SELECT set_config('canopy.user_id', '', false)")
        }
        return PublicDatabaseFixture(endpoint: endpoint, ids: ids)
    }

    var gateway: DatabaseEndpoint { endpoint.asUser("canopy_gateway", password: nil) }
}

/// Who × privilege × type → what must happen (``PublicGrantTable``).
struct PublicCell: Sendable, CustomStringConvertible {
    typealias Privilege = PublicGrantTable.Privilege

    let who: String   // "nobody" or a user of the fixture
    let privilege: Privilege
    let type: String

    var description: String { "\(who) \(privilege.rawValue) \(type)" }

    var allowed: Bool { PublicGrantTable.allows(who, privilege, type) }

    var sql: String {
        let record = "zone_id = canopy.public_zone_id() AND record_name = '\(type)1'"
        switch privilege {
        case .read: return "SELECT count(*)::text FROM canopy.records WHERE \(record)"
        case .create:
            return "INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (canopy.public_zone_id(), 'new', '\(type)') RETURNING '1'"
        case .write: return "WITH w AS (UPDATE canopy.records SET fields = '{\"n\": 2}' WHERE \(record) RETURNING 1) SELECT count(*)::text FROM w"
        case .delete: return "WITH w AS (DELETE FROM canopy.records WHERE \(record) RETURNING 1) SELECT count(*)::text FROM w"
        }
    }

    static let all: [PublicCell] = (["nobody"] + PublicDatabaseFixture.users).flatMap { who in
        Privilege.allCases.flatMap { privilege in PublicDatabaseFixture.types.map { PublicCell(who: who, privilege: privilege, type: $0) } }
    }
}

@Suite("Row-level security: the public database's grants", .serialized)
struct PublicDatabaseMatrixTests {
    static let fixture = PublicFixtureBox()

    @Test(arguments: PublicCell.all)
    func cell(_ cell: PublicCell) async throws {
        let fixture = try await Self.fixture.get()
        let userID = cell.who == "nobody" ? nil : fixture.ids[cell.who]
        let sql = cell.sql
        let result: Result<[String], any Error> = await Result {
            try await TestDatabase.withConnection(fixture.gateway) { connection in
                try await connection.asUser(userID) { connection in
                    try await connection.texts(PostgresQuery(unsafeSQL: sql)).map { $0 ?? "NULL" }
                }
            }
        }
        switch (cell.privilege, result) {
        case (.create, .success(let rows)):
            #expect(cell.allowed && rows == ["1"], "\(cell): created (\(rows))")
        case (.create, .failure(let error)):
            let state = PostgresErrors.sqlState(of: error)
            #expect(!cell.allowed && state == "42501", "\(cell): refused with \(state ?? "?"): \(PostgresErrors.message(of: error))")
        case (_, .success(let rows)):
            // A read or write the grants refuse touches nothing (absence).
            #expect(rows == [cell.allowed ? "1" : "0"], "\(cell): \(rows)")
        case (_, .failure(let error)):
            Issue.record("\(cell): failed: \(PostgresErrors.message(of: error))")
        }
    }

    @Test("deletions in the public feed: a tombstone shows where the record could be read")
    func tombstones() async throws {
        let fixture = try await Self.fixture.get()
        var seen: [String: [String]] = [:]
        for who in ["nobody"] + PublicDatabaseFixture.users {
            let userID = who == "nobody" ? nil : fixture.ids[who]
            seen[who] = try await TestDatabase.withConnection(fixture.gateway) { connection in
                try await connection.asUser(userID) { connection in
                    try await connection.texts("SELECT record_name FROM canopy.tombstones WHERE zone_id = canopy.public_zone_id() ORDER BY 1")
                }
            }.map { $0 ?? "NULL" }
        }
        #expect(seen["nobody"] == ["Flaggone", "Postgone"])
        #expect(seen["stranger"] == ["Flaggone", "Membergone", "Postgone"])
        #expect(seen["creator"] == ["Flaggone", "Membergone", "Postgone", "Secretgone"])
        #expect(seen["moderator"] == ["Flaggone", "Membergone", "Postgone"])
    }

    @Test("a record's creator and type cannot be changed (a type change would pass the new type's CREATE grant by)")
    func creatorFixed() async throws {
        let fixture = try await Self.fixture.get()
        let creator = fixture.ids["creator"]!, stranger = fixture.ids["stranger"]!
        for statement in ["UPDATE canopy.records SET created_by = \(stranger) WHERE record_name = 'Post1' RETURNING 'changed'",
                          "UPDATE canopy.records SET record_type = 'Flag' WHERE record_name = 'Post1' RETURNING 'changed'"] {
            let result: Result<[String?], any Error> = await Result {
                try await TestDatabase.withConnection(fixture.gateway) { connection in
                    try await connection.asUser(creator) { connection in
                        try await connection.texts(PostgresQuery(unsafeSQL: statement))
                    }
                }
            }
            guard case .failure(let error) = result else { Issue.record("allowed: \(statement)"); continue }
            #expect(PostgresErrors.sqlState(of: error) == "42501", "\(statement)")
        }
    }

    @Test("changing a grant or a role's members moves the public zone's access position")
    func accessPosition() async throws {
        let fixture = try await Self.fixture.get()
        let (before, after) = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            let before = try await connection.texts("SELECT access_changed_seq::text FROM canopy.zones WHERE owner_id = 0")
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            try await connection.query("DELETE FROM canopy.role_members WHERE role_name = 'Editor'", logger: TestDatabase.logger)
            let after = try await connection.texts("SELECT access_changed_seq::text FROM canopy.zones WHERE owner_id = 0")
            try await connection.query("ROLLBACK", logger: TestDatabase.logger)
            return (before, after)
        }
        #expect(Int64(before.first.flatMap { $0 } ?? "") != nil)
        #expect(before != after)
    }

    /// migrations/0038: user 0 owns the public zone (a distribution value
    /// on Citus cannot be NULL) and is nobody's account.
    @Test("user 0 owns the public zone: unseen, unfound, holds nothing, neither changed nor deleted")
    func publicOwner() async throws {
        let fixture = try await Self.fixture.get()
        let creator = fixture.ids["creator"]!
        let publicRecordName = "_00000000000000000000000000000000"
        let seen = try await TestDatabase.withConnection(fixture.gateway) { connection in
            try await connection.asUser(creator) { connection in
                try await connection.texts("""
                    SELECT (SELECT count(*) FROM canopy.users WHERE id = 0)::text
                    UNION ALL SELECT coalesce(canopy.user_for_contact(\(publicRecordName), NULL, NULL)::text, 'none')
                    UNION ALL SELECT (SELECT count(*) FROM canopy.zones WHERE owner_id = 0 AND name = '_defaultZone')::text
                    """)
            }
        }
        #expect(seen == ["0", "none", "1"])

        let admin = UserAdmin(logger: TestDatabase.logger)
        let refusals = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            var states: [String: String?] = [:]
            for name in ["_public", publicRecordName] {
                do {
                    _ = try await admin.find(name, connection: connection)
                    states["find \(name)"] = "found"
                } catch let error as StoreError {
                    states["find \(name)"] = "\(error.code)"
                }
            }
            for statement in [
                "DELETE FROM canopy.users WHERE id = 0",
                "UPDATE canopy.users SET display_name = 'x' WHERE id = 0",
                "INSERT INTO canopy.api_tokens (user_id, selector, secret_hash) VALUES (0, '0123456789abcdef', sha256('x'))",
                "INSERT INTO canopy.role_members (role_name, user_id) VALUES ('Editor', 0)",
            ] {
                do {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
                    states[statement] = "allowed"
                } catch {
                    states[statement] = PostgresErrors.sqlState(of: error)
                }
            }
            return states
        }
        #expect(refusals["find _public"] == "\(StoreError.Code.notFound)")
        #expect(refusals["find \(publicRecordName)"] == "\(StoreError.Code.notFound)")
        #expect(refusals["DELETE FROM canopy.users WHERE id = 0"] == "CN004")
        #expect(refusals["UPDATE canopy.users SET display_name = 'x' WHERE id = 0"] == "CN004")
        #expect(refusals.filter { $0.key.hasPrefix("INSERT") }.values.allSatisfy { $0 == "23514" })
    }
}

actor PublicFixtureBox {
    private var task: Task<PublicDatabaseFixture, any Error>?

    func get() async throws -> PublicDatabaseFixture {
        if let task { return try await task.value }
        let task = Task {
            do {
                return try await PublicDatabaseFixture.make()
            } catch {
                throw FixtureError(message: String(reflecting: error))
            }
        }
        self.task = task
        return try await task.value
    }
}
