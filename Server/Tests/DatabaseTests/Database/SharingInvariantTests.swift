@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// The invariants of docs/API.md §1 that the schema itself keeps: hierarchy
/// membership maintained by triggers, one kind of share per zone, the
/// default zone never shared, at most 100 participants, parents and cycles.
/// Each test runs as the zone owner through the gateway role.
@Suite("Sharing invariants kept by the schema")
struct SharingInvariantTests {
    /// A database with one owner and a zone `Z`; returns (gateway endpoint, owner id, zone id).
    func owner() async throws -> (DatabaseEndpoint, Int64, Int64) {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (owner, _) = try await addUser("owner", on: endpoint)
        let gateway = endpoint.asUser("canopy_gateway", password: nil)
        let zone = try await TestDatabase.withConnection(gateway) { connection in
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            try await connection.query("SELECT set_config('canopy.user_id', \(String(owner.id)), true)", logger: TestDatabase.logger)
            let id = try await connection.texts("INSERT INTO canopy.zones (owner_id, name) VALUES (\(owner.id), 'Z') RETURNING id::text")
            try await connection.query("COMMIT", logger: TestDatabase.logger)
            return Int64(id[0]!)!
        }
        return (gateway, owner.id, zone)
    }

    /// Runs statements as the owner, committing; returns the last one's first column.
    @discardableResult
    func run(_ endpoint: DatabaseEndpoint, as user: Int64, _ statements: [String]) async throws -> [String?] {
        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            do {
                try await connection.query("SELECT set_config('canopy.user_id', \(String(user)), true)", logger: TestDatabase.logger)
                var last: [String?] = []
                for statement in statements {
                    last = try await connection.texts(PostgresQuery(unsafeSQL: statement))
                }
                try await connection.query("COMMIT", logger: TestDatabase.logger)
                return last
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: TestDatabase.logger)
                throw error
            }
        }
    }

    func membership(_ endpoint: DatabaseEndpoint, _ user: Int64) async throws -> [String?] {
        try await run(endpoint, as: user, [
            "SELECT record_name || '=' || coalesce(share_id::text, '-') FROM canopy.records ORDER BY record_name"
        ])
    }

    func expectState(_ error: any Error, _ state: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        #expect(PostgresErrors.sqlState(of: error) == state, "\(PostgresErrors.message(of: error))", sourceLocation: sourceLocation)
    }

    @Test("a record-rooted share covers the root's subtree, including records added, moved in and moved out later")
    func hierarchy() async throws {
        let (db, owner, zone) = try await owner()
        try await run(db, as: owner, [
            "INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name) VALUES (\(zone), 'person', 'T', NULL), (\(zone), 'pet', 'T', 'person'), (\(zone), 'toy', 'T', 'pet'), (\(zone), 'sibling', 'T', NULL)",
        ])
        let share = try await run(db, as: owner, [
            "INSERT INTO canopy.shares (zone_id, root_record_id) SELECT zone_id, id FROM canopy.records WHERE record_name = 'person' RETURNING id::text",
        ])[0]!
        #expect(try await membership(db, owner) == ["person=\(share)", "pet=\(share)", "sibling=-", "toy=\(share)"])

        // Added later, deep in the tree.
        try await run(db, as: owner, ["INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name) VALUES (\(zone), 'ball', 'T', 'toy')"])
        #expect(try await membership(db, owner).contains("ball=\(share)"))

        // Moved out with its subtree, then back in.
        try await run(db, as: owner, ["UPDATE canopy.records SET parent_name = 'sibling' WHERE record_name = 'toy'"])
        #expect(try await membership(db, owner) == ["ball=-", "person=\(share)", "pet=\(share)", "sibling=-", "toy=-"])
        try await run(db, as: owner, ["UPDATE canopy.records SET parent_name = 'person' WHERE record_name = 'sibling'"])
        #expect(try await membership(db, owner) == ["ball=\(share)", "person=\(share)", "pet=\(share)", "sibling=\(share)", "toy=\(share)"])

        // Deleting a middle record leaves its children dangling and outside the share.
        try await run(db, as: owner, ["DELETE FROM canopy.records WHERE record_name = 'sibling'"])
        #expect(try await membership(db, owner) == ["ball=-", "person=\(share)", "pet=\(share)", "toy=-"])
        let parent = try await run(db, as: owner, ["SELECT parent_name FROM canopy.records WHERE record_name = 'toy'"])
        #expect(parent == ["sibling"])

        // Re-creating the missing parent inside the share brings the dangling subtree back.
        try await run(db, as: owner, ["INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name) VALUES (\(zone), 'sibling', 'T', 'pet')"])
        #expect(try await membership(db, owner) == ["ball=\(share)", "person=\(share)", "pet=\(share)", "sibling=\(share)", "toy=\(share)"])

        // The owner deleting the root deletes the share; the rest stays, unshared.
        try await run(db, as: owner, ["DELETE FROM canopy.records WHERE record_name = 'person'"])
        #expect(try await membership(db, owner) == ["ball=-", "pet=-", "sibling=-", "toy=-"])
        #expect(try await run(db, as: owner, ["SELECT count(*)::text FROM canopy.shares"]) == ["0"])
    }

    @Test("share maintenance keeps change tags; saves always change them")
    func changeTags() async throws {
        let (db, owner, zone) = try await owner()
        let before = try await run(db, as: owner, [
            "INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name) VALUES (\(zone), 'a', 'T', NULL), (\(zone), 'b', 'T', 'a')",
            "SELECT change_tag FROM canopy.records ORDER BY record_name",
        ])
        try await run(db, as: owner, ["INSERT INTO canopy.shares (zone_id, root_record_id) SELECT zone_id, id FROM canopy.records WHERE record_name = 'a'"])
        #expect(try await run(db, as: owner, ["SELECT change_tag FROM canopy.records ORDER BY record_name"]) == before)
        try await run(db, as: owner, ["UPDATE canopy.records SET fields = fields WHERE record_name = 'b'"])
        let after = try await run(db, as: owner, ["SELECT change_tag FROM canopy.records ORDER BY record_name"])
        #expect(after[0] == before[0])
        #expect(after[1] != before[1], "a save of identical content is still a save")
    }

    @Test("parents must exist in the zone (checked at commit) and never form a cycle")
    func parents() async throws {
        let (db, owner, zone) = try await owner()
        // Child first, parent later in the same transaction: fine.
        try await run(db, as: owner, [
            "INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name) VALUES (\(zone), 'child', 'T', 'parent')",
            "INSERT INTO canopy.records (zone_id, record_name, record_type) VALUES (\(zone), 'parent', 'T')",
        ])
        do {
            try await run(db, as: owner, ["INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name) VALUES (\(zone), 'orphan', 'T', 'nobody')"])
            Issue.record("a record with a missing parent was saved")
        } catch { expectState(error, "CN001") }
        do {
            try await run(db, as: owner, ["UPDATE canopy.records SET parent_name = 'child' WHERE record_name = 'parent'"])
            Issue.record("a cycle was saved")
        } catch { expectState(error, "CN001") }
        do {
            try await run(db, as: owner, ["UPDATE canopy.records SET parent_name = 'parent' WHERE record_name = 'parent'"])
            Issue.record("a record became its own parent")
        } catch { expectState(error, "CN001") }
    }

    @Test("one kind of share per zone, one zone-wide share, one share per record, never the default zone")
    func shareKinds() async throws {
        let (db, owner, zone) = try await owner()
        try await run(db, as: owner, [
            "INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name) VALUES (\(zone), 'a', 'T', NULL), (\(zone), 'b', 'T', 'a'), (\(zone), 'c', 'T', NULL)",
            "INSERT INTO canopy.shares (zone_id, root_record_id) SELECT zone_id, id FROM canopy.records WHERE record_name = 'a'",
        ])
        let attempts: [(String, String)] = [
            ("INSERT INTO canopy.shares (zone_id) VALUES (\(zone))", "23P01"),
            ("INSERT INTO canopy.shares (zone_id, root_record_id) SELECT zone_id, id FROM canopy.records WHERE record_name = 'a'", "CN002"),
            ("INSERT INTO canopy.shares (zone_id, root_record_id) SELECT zone_id, id FROM canopy.records WHERE record_name = 'b'", "CN002"),
            ("INSERT INTO canopy.shares (zone_id) SELECT id FROM canopy.zones WHERE name = '_defaultZone'", "CN004"),
        ]
        for (statement, state) in attempts {
            do {
                try await run(db, as: owner, [statement])
                Issue.record("allowed: \(statement)")
            } catch { expectState(error, state) }
        }
        // A second record share in the zone is fine; nesting one inside the other is not.
        try await run(db, as: owner, ["INSERT INTO canopy.shares (zone_id, root_record_id) SELECT zone_id, id FROM canopy.records WHERE record_name = 'c'"])
        do {
            try await run(db, as: owner, ["UPDATE canopy.records SET parent_name = 'b' WHERE record_name = 'c'"])
            Issue.record("a share root moved inside another share")
        } catch { expectState(error, "CN002") }
        // A zone-wide share in a zone without record shares is fine, once.
        try await run(db, as: owner, ["INSERT INTO canopy.zones (owner_id, name) VALUES (\(owner), 'W')", "INSERT INTO canopy.shares (zone_id) SELECT id FROM canopy.zones WHERE name = 'W'"])
        do {
            try await run(db, as: owner, ["INSERT INTO canopy.shares (zone_id) SELECT id FROM canopy.zones WHERE name = 'W'"])
            Issue.record("two zone-wide shares")
        } catch { expectState(error, "23505") }
    }

    @Test("at most 100 participants besides the owner; REMOVED ones do not count")
    func participantLimit() async throws {
        let (db, owner, _) = try await owner()
        let share = try await run(db, as: owner, ["INSERT INTO canopy.shares (zone_id) SELECT id FROM canopy.zones WHERE name = 'Z' RETURNING id::text"])[0]!
        try await run(db, as: owner, [
            "INSERT INTO canopy.participants (share_id, email, permission) SELECT \(share), 'p' || g || '@example.com', 'READ_ONLY' FROM generate_series(1, 100) g",
        ])
        do {
            try await run(db, as: owner, ["INSERT INTO canopy.participants (share_id, email, permission) VALUES (\(share), 'one-more@example.com', 'READ_ONLY')"])
            Issue.record("a 101st participant was added")
        } catch { expectState(error, "CN003") }
        try await run(db, as: owner, [
            "UPDATE canopy.participants SET status = 'REMOVED' WHERE email = 'p1@example.com'",
            "INSERT INTO canopy.participants (share_id, email, permission) VALUES (\(share), 'one-more@example.com', 'READ_ONLY')",
        ])
        #expect(try await run(db, as: owner, ["SELECT participant_count::text FROM canopy.shares"]) == ["100"])
    }

    @Test("turning the public link off removes public users; changing it changes their permission")
    func publicPermission() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (owner, _) = try await addUser("owner", on: endpoint)
        let (visitor, _) = try await addUser("visitor", on: endpoint)
        let db = endpoint.asUser("canopy_gateway", password: nil)
        let share = try await run(db, as: owner.id, [
            "INSERT INTO canopy.zones (owner_id, name) VALUES (\(owner.id), 'Z')",
            "INSERT INTO canopy.shares (zone_id, public_permission) SELECT id, 'READ_WRITE' FROM canopy.zones WHERE name = 'Z' RETURNING id::text",
        ])[0]!
        try await run(db, as: owner.id, ["INSERT INTO canopy.participants (share_id, user_id, role, permission, status) VALUES (\(share), \(visitor.id), 'PUBLIC_USER', 'READ_WRITE', 'ACCEPTED')"])
        try await run(db, as: owner.id, ["UPDATE canopy.shares SET public_permission = 'READ_ONLY'"])
        #expect(try await run(db, as: visitor.id, ["SELECT permission FROM canopy.participants WHERE user_id = \(visitor.id)"]) == ["READ_ONLY"])
        try await run(db, as: owner.id, ["UPDATE canopy.shares SET public_permission = 'NONE'"])
        #expect(try await run(db, as: owner.id, ["SELECT count(*)::text FROM canopy.participants WHERE role = 'PUBLIC_USER'"]) == ["0"])
        #expect(try await run(db, as: visitor.id, ["SELECT count(*)::text FROM canopy.zones WHERE name = 'Z'"]) == ["0"], "access ends with the next statement")
    }

    @Test("creating a user creates its _defaultZone, which cannot be deleted")
    func defaultZone() async throws {
        let (db, owner, _) = try await owner()
        #expect(try await run(db, as: owner, ["SELECT name FROM canopy.zones WHERE owner_id <> 0 ORDER BY name"]) == ["Z", "_defaultZone"])
        #expect(try await run(db, as: owner, ["WITH d AS (DELETE FROM canopy.zones RETURNING name) SELECT string_agg(name, ',') FROM d"]) == ["Z"])
    }
}
