import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// On Citus the gateway may insert whole tables (a column-level grant
/// refuses the rows the coordinator sends its shards), and the
/// a_gateway_columns triggers take the grant's place (DECISIONS 166): on a
/// row the gateway inserts, every column outside GatewayInsertColumns holds
/// its default. A value the default gives alike on every node is refused
/// when forged (as the grant refuses it); one that differs between nodes
/// (a time, a transaction id, a random token) is set again.
///
/// Run on a Citus coordinator before the distribution: the grants and
/// triggers are the same on distributed tables (the distributed permission
/// matrix checks that none of its writes is refused by a grant on a shard).
@Suite("Citus: the columns the gateway may not choose", .serialized)
struct CitusGatewayColumnsTests {
    /// Table by table, in the order the rows are inserted: the columns the
    /// gateway chooses, a forged value for each column set again (checked
    /// by `column IS NOT DISTINCT FROM forged` being false), and one for
    /// each column refused. Together they name every column outside the
    /// grant (not identities, not generated columns). `$alice`, `$bob`,
    /// `$zone`, `$share`, `$newShare`, `$device` stand for the fixture's ids.
    static let rows: [(table: String, chosen: [String: String], set: [String: String], refused: [String: String])] = [
        ("zones", ["owner_id": "$alice", "name": "'Forged'"],
         ["created_at": "'2001-01-01'", "changed_xid": "'7'::xid8", "feed_base": "77", "announce_txn": "77", "changed_position": "77"],
         ["tombstones_purged_through": "77", "access_changed_seq": "77"]),
        ("records", ["zone_id": "$zone", "owner_id": "$alice", "record_name": "'forged'", "record_type": "'Item'"],
         ["share_id": "$share", "change_tag": "'forged'", "change_seq": "77", "created_at": "'2001-01-01'", "created_by": "$bob",
          "modified_at": "'2001-01-01'", "modified_by": "$bob", "created_by_name": "'forged'", "modified_by_name": "'forged'"],
         [:]),
        ("shares", ["zone_id": "$zone", "owner_id": "$alice", "title": "'Forged'"],
         ["url_token": "'forged'", "created_at": "'2001-01-01'", "modified_at": "'2001-01-01'"],
         ["participant_count": "77"]),
        ("participants", ["share_id": "$newShare", "owner_id": "$alice", "user_id": "$bob", "permission": "'READ_ONLY'"],
         ["invited_at": "'2001-01-01'"], [:]),
        ("share_requests", ["share_id": "$newShare", "owner_id": "$alice", "user_id": "$bob", "status": "'BLOCKED'"],
         ["requested_at": "'2001-01-01'"], [:]),
        ("uploads", ["token_hash": "sha256('forged')", "sha256": "repeat('a', 64)", "size": "1", "content_type": "'text/plain'"],
         ["created_at": "'2001-01-01'", "expires_at": "'2001-01-01'"],
         ["user_id": "$bob", "used_at": "now()"]),
        ("push_deliveries", ["device_id": "'$device'", "user_id": "$alice", "subscription_ids": "ARRAY['all']"],
         ["next_attempt_at": "'2001-01-01'", "first_queued_at": "'2001-01-01'"],
         ["version": "77", "attempts": "77", "claimed_until": "'2001-01-01'"]),
    ]

    @Test("on Citus a new row's columns the gateway may not choose are refused when forged or set again, and the list names every such column")
    func forgedColumnsTakeTheirDefaults() async throws {
        let (endpoint, alice, bob) = try await CitusDistributionTests.populated()
        let ids = try await TestDatabase.withConnection(endpoint) { connection in
            // A zone with no share yet, for the zone-wide share inserted below.
            _ = try await connection.texts(PostgresQuery(unsafeSQL: "INSERT INTO canopy.zones (owner_id, name) VALUES (\(alice), 'Trips')"))
            // A device of alice's, for the push delivery.
            _ = try await connection.texts(PostgresQuery(unsafeSQL: """
                INSERT INTO canopy.push_devices (user_id, kind, courier_token_hash) VALUES (\(alice), 'COURIER', sha256('courier'))
                """))
            return try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT (SELECT id FROM canopy.zones WHERE owner_id = \(alice) AND name = 'Trips')::text
                UNION ALL SELECT (SELECT id FROM canopy.shares WHERE owner_id = \(alice))::text
                UNION ALL SELECT (SELECT id FROM canopy.push_devices WHERE user_id = \(alice))::text
                """)).compactMap { $0 }
        }
        try #require(ids.count == 3)
        var values = ["$alice": String(alice), "$bob": String(bob), "$zone": ids[0], "$share": ids[1], "$device": ids[2]]
        func bound(_ text: String) -> String {
            values.reduce(text) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
        }

        // The list names every column outside the grant, so a column added
        // later cannot be left to whatever the gateway says.
        let columns = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("""
                SELECT table_name || ' ' || column_name FROM information_schema.columns
                 WHERE table_schema = 'canopy' AND is_identity = 'NO' AND is_generated = 'NEVER'
                   AND table_name IN ('zones', 'records', 'shares', 'participants', 'share_requests', 'uploads', 'push_deliveries')
                """).compactMap { $0 }
        }
        for (table, _, set, refused) in Self.rows {
            let unchosen = Set(columns.filter { $0.hasPrefix("\(table) ") }.map { String($0.dropFirst(table.count + 1)) })
                .subtracting(GatewayInsertColumns.granted[table] ?? [])
            let forged = Set(set.keys).union(refused.keys)
            #expect(forged == unchosen, "\(table): forged \(forged.sorted()), not the gateway's to choose \(unchosen.sorted())")
        }
        #expect(Set(Self.rows.map(\.table)) == Set(GatewayInsertColumns.granted.keys))

        var kept: [String] = [], allowed: [String] = []
        try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { gateway in
            /// Inserts one row as the gateway acting for alice; its words
            /// (the row's id, then one flag per `checked` column), or nil
            /// and the server's SQLSTATE when refused.
            func insert(_ table: String, _ values: [String: String], checked: [String]) async throws -> (words: [String], refusal: String?) {
                let names = Array(values.keys)
                let row = names.map { bound(values[$0]!) }
                let check = checked.map { "(\($0) IS NOT DISTINCT FROM \(bound(values[$0]!)))::text" }
                let key = table == "push_deliveries" ? "device_id" : "id"
                let insert = "INSERT INTO canopy.\(table) (\(names.joined(separator: ", "))) VALUES (\(row.joined(separator: ", "))) "
                    + "RETURNING \(([key + "::text"] + check).joined(separator: " || ' ' || "))"
                try await gateway.query("BEGIN", logger: TestDatabase.logger)
                do {
                    try await gateway.query("SELECT canopy.act_as(\(alice), NULL, NULL, NULL)", logger: TestDatabase.logger)
                    let answer = try await gateway.texts(PostgresQuery(unsafeSQL: insert))
                    try await gateway.query("COMMIT", logger: TestDatabase.logger)
                    return (((answer.first ?? nil) ?? "").split(separator: " ").map(String.init), nil)
                } catch let error as PSQLError {
                    _ = try? await gateway.query("ROLLBACK", logger: TestDatabase.logger)
                    return ([], "\(error.serverInfo?[.sqlState] ?? "?") \(error.serverInfo?[.message] ?? String(reflecting: error)) [\(insert)]")
                }
            }
            for (table, chosen, set, refused) in Self.rows {
                // Each refused column forged alone: refused as the grant would.
                for (name, value) in refused {
                    let (_, refusal) = try await insert(table, chosen.merging([name: value]) { $1 }, checked: [])
                    if refusal?.hasPrefix("42501") != true { allowed.append("\(table).\(name): \(refusal ?? "inserted")") }
                }
                // Every column set again forged at once: the row is made,
                // holding none of them.
                let (words, refusal) = try await insert(table, chosen.merging(set) { $1 }, checked: Array(set.keys))
                if let refusal {
                    Issue.record("\(table): \(refusal)")
                    continue
                }
                if table == "shares" { values["$newShare"] = words.first }
                for (name, flag) in zip(set.keys, words.dropFirst()) where flag == "true" {
                    kept.append("\(table).\(name)")
                }
            }
        }
        #expect(allowed.isEmpty, "forged values not refused: \(allowed)")
        #expect(kept.isEmpty, "forged values kept: \(kept)")
    }
}
