@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// migrations/0040: every key of a zone-scoped table holds the zone's
/// owner, as Citus requires of a table distributed by it, and no reference
/// that holds the owner sets anything NULL (Citus refuses that). The one
/// that did, records to their share, is done by the share's BEFORE DELETE
/// trigger now (DECISIONS 157): a share that goes, by itself, with its
/// root record or with its zone, leaves no record in it.
@Suite("The owner in every key of the zone-scoped tables")
struct OwnerKeysTests {
    static let zoneScoped = [
        "zones", "records", "tombstones", "shares", "participants", "memberships",
        "zone_departures", "share_requests", "share_activity", "push_outbox",
    ]
    /// Keys that still lack the owner: none since migrations/0042.
    static let waiting: Set<String> = []

    @Test("every primary key, unique key, unique index and exclusion of a zone-scoped table holds owner_id; no reference holding it sets NULL")
    func keysHoldTheOwner() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let tables = Self.zoneScoped.map { "'canopy.\($0)'" }.joined(separator: ", ")
        let (keys, references) = try await TestDatabase.withConnection(endpoint) { connection in
            let keys = try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT i.indexrelid::regclass::text
                  FROM pg_index i
                 WHERE i.indrelid::regclass::text IN (\(tables))
                   AND (i.indisunique OR i.indisexclusion)
                   AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                                    WHERE a.attrelid = i.indrelid AND a.attname = 'owner_id' AND a.attnum = ANY (i.indkey))
                 ORDER BY 1
                """))
            let references = try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT c.conname::text
                  FROM pg_constraint c
                 WHERE c.contype = 'f' AND c.conrelid::regclass::text IN (\(tables))
                   AND (c.confrelid::regclass::text IN (\(tables))
                        AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                                         WHERE a.attrelid = c.conrelid AND a.attname = 'owner_id' AND a.attnum = ANY (c.conkey))
                        OR EXISTS (SELECT 1 FROM pg_attribute a
                                    WHERE a.attrelid = c.conrelid AND a.attname = 'owner_id' AND a.attnum = ANY (c.conkey))
                           AND c.confdeltype IN ('n', 'd'))
                 ORDER BY 1
                """))
            return (keys.compactMap { $0 }, references.compactMap { $0 })
        }
        #expect(Set(keys.map { $0.replacingOccurrences(of: "canopy.", with: "") }) == Self.waiting, "\(keys)")
        #expect(references.isEmpty, "\(references)")
    }

    @Test("a share deleted by itself, with its root record or with its zone leaves no record in it, and its records leave a left_share tombstone")
    func recordsLeaveADeletedShare() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let answers = try await TestDatabase.withConnection(endpoint) { connection in
            func run(_ sql: String) async throws -> [String?] {
                try await connection.texts(PostgresQuery(unsafeSQL: sql))
            }
            func share(_ zone: String, _ root: String) async throws {
                _ = try await run("""
                    INSERT INTO canopy.shares (zone_id, root_record_id)
                    SELECT r.zone_id, r.id FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id
                     WHERE z.owner_id = \(alice.id) AND z.name = '\(zone)' AND r.record_name = '\(root)'
                    """)
            }
            /// The zone's records in a share, and its left_share tombstones.
            func state(_ zone: String) async throws -> [String?] {
                try await run("""
                    SELECT (SELECT count(*) FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id
                             WHERE z.name = '\(zone)' AND r.share_id IS NOT NULL)
                           || ' in, ' ||
                           (SELECT count(*) FROM canopy.tombstones t JOIN canopy.zones z ON z.id = t.zone_id
                             WHERE z.name = '\(zone)' AND t.kind = 'left_share') || ' left'
                    """)
            }
            _ = try await run("SELECT set_config('canopy.user_id', '\(alice.id)', false)")
            for zone in ["Trips", "Notes"] {
                _ = try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), '\(zone)')")
                _ = try await run("""
                    INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name)
                    SELECT z.id, n.name, 'Item', n.parent FROM canopy.zones z,
                           (VALUES ('root', NULL), ('child', 'root'), ('grandchild', 'child'), ('apart', NULL)) n (name, parent)
                     WHERE z.owner_id = \(alice.id) AND z.name = '\(zone)'
                    """)
            }
            var answers: [String?] = []
            try await share("Trips", "root")
            answers += try await state("Trips")
            _ = try await run("DELETE FROM canopy.shares WHERE zone_id = (SELECT id FROM canopy.zones WHERE name = 'Trips')")
            answers += try await state("Trips")
            try await share("Trips", "child")
            _ = try await run("DELETE FROM canopy.records WHERE record_name = 'child' AND zone_id = (SELECT id FROM canopy.zones WHERE name = 'Trips')")
            answers += try await run("SELECT count(*)::text FROM canopy.shares")
            answers += try await state("Trips")
            try await share("Notes", "root")
            _ = try await run("DELETE FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Notes'")
            answers += try await run("SELECT count(*)::text FROM canopy.shares")
            answers += try await run("SELECT count(*)::text FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id WHERE z.name = 'Notes'")
            return answers
        }
        #expect(answers == [
            "3 in, 0 left",
            "0 in, 3 left",
            "0",
            "0 in, 4 left",
            "0",
            "0",
        ])
    }

    /// migrations/0042: push subscriptions no longer reference their zone
    /// (DECISIONS 160); the zone's trigger removes them when it goes,
    /// whoever deletes it, as the reference's cascade did.
    @Test("a zone deleted, or its owner's account, takes the push subscriptions on it, its owner's and others'; the rest stay")
    func subscriptionsGoWithTheirZone() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        let remaining = try await TestDatabase.withConnection(endpoint) { connection in
            func run(_ sql: String) async throws -> [String?] {
                try await connection.texts(PostgresQuery(unsafeSQL: sql))
            }
            _ = try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice.id), 'Trips'), (\(bob.id), 'Recipes')")
            _ = try await run("""
                INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope, zone_id, record_type)
                SELECT \(alice.id), 'alice-trips', 'ZONE', 'PRIVATE', id, NULL FROM canopy.zones WHERE name = 'Trips'
                UNION ALL SELECT \(bob.id), 'bob-trips', 'ZONE', 'SHARED', id, NULL FROM canopy.zones WHERE name = 'Trips'
                UNION ALL SELECT \(alice.id), 'alice-recipes', 'ZONE', 'SHARED', id, NULL FROM canopy.zones WHERE name = 'Recipes'
                UNION ALL SELECT \(alice.id), 'alice-all', 'DATABASE', 'PRIVATE', NULL, NULL
                UNION ALL SELECT \(alice.id), 'alice-public', 'QUERY', 'PUBLIC', id, 'Post' FROM canopy.zones WHERE owner_id = 0
                """)
            _ = try await run("DELETE FROM canopy.zones WHERE owner_id = \(alice.id) AND name = 'Trips'")
            var remaining = try await run("SELECT string_agg(subscription_id, ' ' ORDER BY subscription_id) FROM canopy.push_subscriptions")
            _ = try await run("DELETE FROM canopy.users WHERE id = \(bob.id)")
            remaining += try await run("SELECT string_agg(subscription_id, ' ' ORDER BY subscription_id) FROM canopy.push_subscriptions")
            return remaining
        }
        #expect(remaining == ["alice-all alice-public alice-recipes", "alice-all alice-public"])
    }
}
