@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// migrations/0039: every zone-scoped row carries its zone's owner (on
/// Citus, what it is distributed by). Writers that do not give it get it
/// from the row's zone or share; a row given another owner is refused by
/// the references `(zone_id, owner_id)` and `(share_id, owner_id)`; a
/// record moved to another owner's zone carries the new owner.
@Suite("Zone-scoped rows carry their zone's owner")
struct OwnerIDTests {
    /// Rows whose owner is not their zone's (or share's): none, ever.
    static let strays = """
        SELECT coalesce(string_agg(t || ' ' || id, ', '), '') FROM (
            SELECT 'records' AS t, r.id FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id WHERE r.owner_id <> z.owner_id
            UNION ALL SELECT 'tombstones', t.id FROM canopy.tombstones t JOIN canopy.zones z ON z.id = t.zone_id WHERE t.owner_id <> z.owner_id
            UNION ALL SELECT 'shares', s.id FROM canopy.shares s JOIN canopy.zones z ON z.id = s.zone_id WHERE s.owner_id <> z.owner_id
            UNION ALL SELECT 'participants', p.id FROM canopy.participants p JOIN canopy.shares s ON s.id = p.share_id WHERE p.owner_id <> s.owner_id
            UNION ALL SELECT 'share_requests', q.id FROM canopy.share_requests q JOIN canopy.shares s ON s.id = q.share_id WHERE q.owner_id <> s.owner_id
            UNION ALL SELECT 'push_outbox', o.id FROM canopy.push_outbox o JOIN canopy.zones z ON z.id = o.zone_id WHERE o.owner_id <> z.owner_id
        ) stray
        """

    @Test("rows written without an owner get their zone's; a move to another owner's zone carries the new owner; none strays")
    func ownersFollowZones() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        let answers = try await TestDatabase.withConnection(endpoint) { connection in
            func run(_ sql: String) async throws -> [String?] {
                try await connection.texts(PostgresQuery(unsafeSQL: sql))
            }
            _ = try await run("SELECT set_config('canopy.user_id', '\(alice.id)', false)")
            _ = try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Trips')")
            _ = try await run("""
                INSERT INTO canopy.records (zone_id, record_name, record_type)
                SELECT z.id, n, 'Trip' FROM canopy.zones z, unnest(ARRAY['paris', 'rome', 'oslo']) n
                 WHERE z.owner_id = \(alice.id) AND z.name = 'Trips'
                """)
            _ = try await run("""
                INSERT INTO canopy.records (zone_id, record_name, record_type)
                SELECT id, 'notice', 'Post' FROM canopy.zones WHERE owner_id = 0
                """)
            _ = try await run("""
                INSERT INTO canopy.shares (zone_id, root_record_id)
                SELECT r.zone_id, r.id FROM canopy.records r WHERE r.record_name = 'paris'
                """)
            _ = try await run("DELETE FROM canopy.records WHERE record_name = 'oslo'")
            var answers = try await run("""
                SELECT string_agg(x, ' ' ORDER BY x) FROM (
                    SELECT 'record:' || r.record_name || '=' || CASE r.owner_id WHEN \(alice.id) THEN 'alice' ELSE r.owner_id::text END AS x FROM canopy.records r
                    UNION ALL SELECT 'tombstone:' || t.record_name || '=' || CASE t.owner_id WHEN \(alice.id) THEN 'alice' ELSE t.owner_id::text END FROM canopy.tombstones t
                    UNION ALL SELECT 'share=' || CASE s.owner_id WHEN \(alice.id) THEN 'alice' ELSE s.owner_id::text END FROM canopy.shares s
                    UNION ALL SELECT 'participant:' || p.role || '=' || CASE p.owner_id WHEN \(alice.id) THEN 'alice' ELSE p.owner_id::text END FROM canopy.participants p
                ) o
                """)
            // Given another owner than its zone's: refused by the reference.
            for statement in [
                "INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type) SELECT id, \(bob.id), 'forged', 'Trip' FROM canopy.zones WHERE name = 'Trips'",
                "UPDATE canopy.records SET owner_id = \(bob.id) WHERE record_name = 'rome'",
                "INSERT INTO canopy.participants (share_id, owner_id, email, role, permission, status) SELECT id, \(bob.id), 'x@example.com', 'PRIVATE_USER', 'READ_ONLY', 'PENDING' FROM canopy.shares",
            ] {
                do {
                    _ = try await run(statement)
                    answers.append("allowed")
                } catch {
                    answers.append(PostgresErrors.sqlState(of: error))
                }
            }
            // bob's zone, shared with alice as a writer, takes rome: it is bob's now.
            _ = try await run("SELECT set_config('canopy.user_id', '\(bob.id)', false)")
            _ = try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(bob.id), 'Shared')")
            _ = try await run("""
                WITH s AS (INSERT INTO canopy.shares (zone_id) SELECT id FROM canopy.zones WHERE owner_id = \(bob.id) AND name = 'Shared' RETURNING id)
                INSERT INTO canopy.participants (share_id, user_id, role, permission, status, accepted_at)
                SELECT id, \(alice.id), 'PRIVATE_USER', 'READ_WRITE', 'ACCEPTED', now() FROM s
                """)
            _ = try await run("SELECT set_config('canopy.user_id', '\(alice.id)', false)")
            answers += try await run("""
                SELECT count(*)::text FROM canopy.move_records(
                    (SELECT id FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Trips'),
                    (SELECT id FROM canopy.zones WHERE owner_id = \(bob.id) AND name = 'Shared'), ARRAY['rome'], false, NULL)
                 WHERE code IS NOT NULL
                """)
            answers += try await run("""
                SELECT (SELECT CASE owner_id WHEN \(bob.id) THEN 'bob' ELSE owner_id::text END FROM canopy.records WHERE record_name = 'rome')
                    || ' ' || (SELECT CASE owner_id WHEN \(alice.id) THEN 'alice' ELSE owner_id::text END FROM canopy.tombstones WHERE record_name = 'rome')
                """)
            answers += try await run(Self.strays)
            return answers
        }
        #expect(answers == [
            "participant:OWNER=alice record:notice=0 record:paris=alice record:rome=alice share=alice tombstone:oslo=alice",
            "23503", "23503", "23503",
            "0",
            "bob alice",
            "",
        ])
    }
}
