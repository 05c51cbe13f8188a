import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO

/// Two owners' data and one user for every participant state of docs/API.md §1:
///
/// alice owns zone Family (a record-rooted share on `root`, covering
/// `root` > `child` > `grandchild`, while `private` stays out) and zone Log
/// (shared zone-wide, record `log1`). bob owns zone Bobs (`bob1`), shared
/// with nobody. Both of alice's shares have public permission READ_ONLY and
/// the same participants:
///
/// | user     | role          | permission | status   |
/// |----------|---------------|------------|----------|
/// | pending  | PRIVATE_USER  | READ_WRITE | PENDING  |
/// | reader   | PRIVATE_USER  | READ_ONLY  | ACCEPTED |
/// | writer   | PRIVATE_USER  | READ_WRITE | ACCEPTED |
/// | admin    | ADMINISTRATOR | READ_WRITE | ACCEPTED |
/// | public   | PUBLIC_USER   | READ_ONLY  | ACCEPTED |
/// | removed  | PRIVATE_USER  | READ_WRITE | REMOVED  |
/// | stranger | (none)        |            |          |
struct PermissionFixture: Sendable {
    let endpoint: DatabaseEndpoint
    let ids: [String: Int64]
    /// The tables distributed on a Citus cluster (after the fixture's rows
    /// were written): a case then says who it acts for by `canopy.act_as`
    /// (SET LOCAL, carried to the workers), as the gateway does there.
    var distributed = false

    static let identities = ["alice", "bob", "pending", "reader", "writer", "admin", "public", "removed", "stranger"]

    static func make(onCitus: Bool = false, distributed: Bool = false) async throws -> PermissionFixture {
        let endpoint = onCitus
            ? try await TestDatabase.shared.migratedCitusDatabase()
            : try await TestDatabase.shared.migratedDatabase()
        var ids: [String: Int64] = [:]
        for name in identities {
            let (user, _) = try await addUser(name, email: "\(name)@example.com", on: endpoint)
            ids[name] = user.id
        }
        let snapshot = ids
        try await TestDatabase.withConnection(endpoint) { connection in
            func run(_ sql: String) async throws {
                try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
            }
            let alice = snapshot["alice"]!, bob = snapshot["bob"]!
            try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice), 'Family'), (\(alice), 'Log'), (\(bob), 'Bobs')")
            try await run("SELECT set_config('canopy.user_id', '\(alice)', false)")
            try await run("""
                INSERT INTO canopy.records (zone_id, record_name, record_type, fields, parent_name)
                SELECT z.id, v.name, 'Item', '{"n": 1}', v.parent
                  FROM canopy.zones z, (VALUES ('root', NULL), ('child', 'root'), ('grandchild', 'child'), ('private', NULL)) v (name, parent)
                 WHERE z.owner_id = \(alice) AND z.name = 'Family'
                """)
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) SELECT id, 'log1', 'Entry' FROM canopy.zones WHERE owner_id = \(alice) AND name = 'Log'")
            try await run("SELECT set_config('canopy.user_id', '\(bob)', false)")
            try await run("INSERT INTO canopy.records (zone_id, record_name, record_type) SELECT id, 'bob1', 'Item' FROM canopy.zones WHERE owner_id = \(bob) AND name = 'Bobs'")
            try await run("""
                INSERT INTO canopy.shares (zone_id, root_record_id, title, public_permission)
                SELECT r.zone_id, r.id, 'Family tree', 'READ_ONLY' FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id
                 WHERE z.owner_id = \(alice) AND r.record_name = 'root'
                """)
            try await run("INSERT INTO canopy.shares (zone_id, title, public_permission) SELECT id, 'Log', 'READ_ONLY' FROM canopy.zones WHERE owner_id = \(alice) AND name = 'Log'")
            let participants: [(String, String, String, String)] = [
                ("pending", "PRIVATE_USER", "READ_WRITE", "PENDING"),
                ("reader", "PRIVATE_USER", "READ_ONLY", "ACCEPTED"),
                ("writer", "PRIVATE_USER", "READ_WRITE", "ACCEPTED"),
                ("admin", "ADMINISTRATOR", "READ_WRITE", "ACCEPTED"),
                ("public", "PUBLIC_USER", "READ_ONLY", "ACCEPTED"),
                ("removed", "PRIVATE_USER", "READ_WRITE", "ACCEPTED"),
            ]
            for (name, role, permission, status) in participants {
                try await run("""
                    INSERT INTO canopy.participants (share_id, user_id, role, permission, status)
                    SELECT s.id, \(snapshot[name]!), '\(role)', '\(permission)', '\(status)' FROM canopy.shares s
                    """)
            }
            // Departures for databaseChanges: removed is removed from both shares,
            // bob deletes a zone of his.
            try await run("UPDATE canopy.participants SET status = 'REMOVED' WHERE user_id = \(snapshot["removed"]!)")
            try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(bob), 'Gone')")
            try await run("DELETE FROM canopy.zones WHERE owner_id = \(bob) AND name = 'Gone'")
            // Two deletions for the change feed: one inside the shared hierarchy, one outside.
            try await run("SELECT set_config('canopy.user_id', '\(alice)', false)")
            try await run("""
                INSERT INTO canopy.records (zone_id, record_name, record_type, parent_name)
                SELECT z.id, v.name, 'Item', v.parent FROM canopy.zones z, (VALUES ('gone', 'child'), ('gone2', NULL)) v (name, parent)
                 WHERE z.owner_id = \(alice) AND z.name = 'Family'
                """)
            try await run("DELETE FROM canopy.records WHERE record_name IN ('gone', 'gone2')")
            try await run("SELECT set_config('canopy.user_id', '', false)")
            // Alice has an upload waiting to be attached.
            try await run("INSERT INTO canopy.uploads (user_id, token_hash, sha256, size, content_type) VALUES (\(alice), sha256('t1'), repeat('a', 64), 3, 'image/png')")
            // and a second one attached to log1 (the zone-wide shared zone).
            try await run("INSERT INTO canopy.uploads (user_id, token_hash, sha256, size, content_type) VALUES (\(alice), sha256('t2'), repeat('c', 64), 5, 'image/png')")
            try await run("SELECT set_config('canopy.user_id', '\(alice)', false)")
            try await run("""
                UPDATE canopy.records SET fields = fields || '{"img": {"type": "ASSET", "uploadToken": "t2"}}'
                 WHERE record_name = 'log1'
                """)
            try await run("SELECT set_config('canopy.user_id', '', false)")
            // Push (migrations/0020): alice and bob each have a subscription
            // and a webhook; alice's device is owed a notification.
            try await run("""
                INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope)
                VALUES (\(alice), 'alice-all', 'DATABASE', 'PRIVATE'), (\(bob), 'bob-all', 'DATABASE', 'PRIVATE')
                """)
            try await run("""
                INSERT INTO canopy.push_devices (user_id, kind, webhook_url, webhook_secret)
                VALUES (\(alice), 'WEBHOOK', 'https://alice.example/hook', sha256('a')), (\(bob), 'WEBHOOK', 'https://bob.example/hook', sha256('b'))
                """)
            try await run("INSERT INTO canopy.push_deliveries (device_id, user_id, subscription_ids) SELECT id, user_id, '{alice-all}' FROM canopy.push_devices WHERE user_id = \(alice)")
            // Alice also signs in with an identity provider.
            try await run("INSERT INTO canopy.identities (user_id, issuer, subject, provider) VALUES (\(alice), 'https://idp.example', 'alice-at-idp', 'idp')")
        }
        try await TestDatabase.withConnection(endpoint) { connection in
            for try await (name, id) in try await connection.query(
                """
                SELECT 'zone:' || name, id FROM canopy.zones WHERE name <> '_defaultZone'
                UNION ALL SELECT 'owner:' || name, owner_id FROM canopy.zones WHERE name <> '_defaultZone'
                UNION ALL SELECT 'share:' || title, id FROM canopy.shares
                """,
                logger: TestDatabase.logger
            ).decode((String, Int64).self) {
                ids[name] = id
            }
        }
        if distributed {
            try await TestDatabase.withConnection(endpoint) { connection in
                try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
            }
        }
        return PermissionFixture(endpoint: endpoint, ids: ids, distributed: distributed)
    }

    var gateway: DatabaseEndpoint { endpoint.asUser("canopy_gateway", password: nil) }
}

/// Builds the fixture once for the suite, whichever test asks first.
actor FixtureBox {
    /// On a Citus coordinator (the Citus tier), or one PostgreSQL.
    let onCitus: Bool
    /// On Citus, the tables distributed once the rows are written.
    let distributed: Bool

    init(onCitus: Bool = false, distributed: Bool = false) {
        self.onCitus = onCitus
        self.distributed = distributed
    }

    private var task: Task<PermissionFixture, any Error>?

    func get() async throws -> PermissionFixture {
        if let task { return try await task.value }
        let onCitus = self.onCitus, distributed = self.distributed
        let task = Task {
            do {
                return try await PermissionFixture.make(onCitus: onCitus, distributed: distributed)
            } catch {
                // Say what went wrong: PSQLError's description hides it.
                throw FixtureError(message: String(reflecting: error))
            }
        }
        self.task = task
        return try await task.value
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
