@testable import CanopyGatewayTestSupport
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import NIOConcurrencyHelpers
import PostgresNIO
import Testing

/// Issue 67's "a shard moved while writers run loses nothing and changes
/// no answer": alice's shard group (her zones, records, shares and every
/// table distributed by owner beside them) moved to the other worker while
/// the database feed's race runs (``DatabaseFeedRace``: writers on the
/// gateway role, a reader syncing through the gateway) and a second writer
/// saves through the gateway, one record a request.
///
/// By `shard_transfer_mode => 'block_writes'`: Citus's default, logical
/// replication, never ends on Canopy's tables once a write comes during the
/// copy (its apply role is not a superuser, and PostgreSQL refuses to
/// apply into a table whose row-level security is forced: "cannot
/// replicate into relation with row-level security enabled", retried every
/// five seconds, forever). DECISIONS 179; docs/CITUS.md.
@Suite("Citus: a shard moved under writers", .serialized)
struct CitusShardMoveTests {
    @Test("alice's shard moved to the other worker while writers write and a reader syncs: nothing lost, no save refused, a participant's reads and refusals unchanged")
    func moveUnderWriters() async throws {
        let harness = try await GatewayHarness.makeOnCitus(distributed: true)
        try await harness.test { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Moving\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Moving", (0..<5).map { fast("before-\($0)", hours: $0, end: Int64($0)) })
            // Bob reads the zone by a public read-only link; he cannot write.
            let shared = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Moving\", publicPermission: READ_ONLY) { url } }", token: alice)
            let url = try #require(shared.object["url"] as? String, "\(shared.body)")
            let accepted = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { role } }", token: bob)
            #expect(accepted.object["role"] as? String == "PUBLIC_USER", "\(accepted.body)")

            let moveStarted = NIOLockedValueBox(false)
            let moveEnded = NIOLockedValueBox(false)
            async let race = DatabaseFeedRace.run(harness, client: client)
            async let gatewaySaves = Self.saveThroughTheGateway(client, token: alice, moveStarted: moveStarted, moveEnded: moveEnded)
            async let moved = Self.moveShard(of: harness.alice.id, harness.endpoint, started: moveStarted, ended: moveEnded)
            let (outcome, saves, placement) = try await (race, gatewaySaves, moved)

            DatabaseFeedRace.check(outcome)
            #expect(placement.now == placement.to, "the shard is on the other worker: \(placement)")
            #expect(saves.beforeMove > 0 && saves.afterMove >= 5, "saves went on across the move: \(saves)")
            #expect(saves.duringMove > 0, "a save was sent while the shards were being copied: \(saves)")
            // A save sent during the copy waits for the move and runs on the
            // new placement (canopy.hold_placements, DECISIONS 180): before,
            // one ran half on each and was refused as PERMISSION_FAILURE.
            #expect(saves.refusedDuringTheMove.isEmpty, "no save was refused during the move: \(saves.refusedDuringTheMove.prefix(3))")
            #expect(saves.refusedOutsideTheMove.isEmpty, "no save was refused before or after the move: \(saves.refusedOutsideTheMove.prefix(3))")

            // What alice saved through the gateway is all there, for her and
            // for bob; bob still cannot write.
            let expected = Set((0..<5).map { "before-\($0)" }).union(saves.saved)
            let zone = "{zoneName: \"Moving\", ownerName: \"\(harness.alice.userRecordName)\"}"
            let readers: [(scope: String, owner: String?, token: String)] = [("PRIVATE", nil, alice), ("SHARED", harness.alice.userRecordName, bob)]
            for (scope, owner, token) in readers {
                var names: Set<String> = []
                var since: String?
                while true {
                    let (page, answer) = try await client.zoneChanges("Moving", scope: scope, owner: owner, since: since, limit: 200, token: token)
                    let current = try #require(page, "\(scope): \(answer.body)")
                    names.formUnion(current.changed)
                    since = current.token
                    if !current.moreComing { break }
                }
                #expect(names == expected, "\(scope): \(names.symmetricDifference(expected).sorted().prefix(5))")
            }
            let write = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: \(zone), save: $s) { errors { code } } }
                """, ["s": [fast("bobs", hours: 1, end: 1)]], token: bob)
            #expect((write.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "PERMISSION_FAILURE", "\(write.body)")
        }
    }

    /// A share accepted by its URL names no owner in the gateway's
    /// statement, so the gateway held only the caller's shards; the
    /// function holds the share's owner's itself, before its first read of
    /// them (DECISIONS 184). Its writes would hold them anyway (Citus's own
    /// lock for a routed modification), but only from the first write: a
    /// move committed between its reads and its writes would split it. So
    /// the case here reads only: bob accepts again, which changes nothing.
    @Test("an acceptance by URL holds the share's owner's shards from its first read: a move of them waits for its transaction")
    func acceptanceHoldsTheOwnersShards() async throws {
        let harness = try await GatewayHarness.makeOnCitus(distributed: true)
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Held\") { zoneName } }", token: harness.aliceToken)
            let shared = try await client.call("saveShare", "mutation { saveShare(zoneName: \"Held\", publicPermission: READ_ONLY) { url } }", token: harness.aliceToken)
            let url = try #require(shared.object["url"] as? String, "\(shared.body)")
            let accepted = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { role } }", token: harness.bobToken)
            #expect(accepted.object["role"] as? String == "PUBLIC_USER", "\(accepted.body)")
        }
        let (alice, bob) = (harness.alice.id, harness.bob.id)
        let (token, shards) = try await TestDatabase.withConnection(harness.endpoint) { connection in
            let token = try await connection.texts("SELECT url_token FROM canopy.share_tokens WHERE owner_id = \(alice)").first ?? nil
            let shards = try await connection.texts("""
                SELECT get_shard_id_for_distribution_column('canopy.zones', o)::text FROM unnest(ARRAY[\(alice), \(bob)]::int8[]) AS o
                """)
            return (token, shards)
        }
        let url = try #require(token, "alice's share has a token")
        // Otherwise bob's own hold would hold alice's shards too.
        #expect(shards[0] != shards[1], "alice and bob have shards of their own: \(shards)")

        let gateway = harness.endpoint.asUser("canopy_gateway", password: nil)
        let move = try await TestDatabase.withConnection(gateway) { connection in
            try await connection.asUser(bob, actAs: true) { connection in
                let accepted = try await connection.texts("SELECT canopy.accept_share(\(url))::text")
                #expect(accepted.first ?? nil != nil, "bob accepted again")
                // The acceptance's transaction is open: moving alice's
                // shards must wait for it, and so runs past its lock timeout.
                return try await TestDatabase.withConnection(harness.endpoint) { admin in
                    _ = try await admin.query("SET lock_timeout = '2s'", logger: TestDatabase.logger)
                    _ = try await admin.query("SET statement_timeout = '60s'", logger: TestDatabase.logger)
                    do {
                        _ = try await admin.query("""
                            SELECT citus_move_shard_placement(s.shardid, s.nodename, s.nodeport, other.nodename, other.nodeport, shard_transfer_mode => 'block_writes')
                              FROM citus_shards s
                              JOIN pg_dist_node other ON other.groupid > 0 AND (other.nodename, other.nodeport) <> (s.nodename, s.nodeport)
                             WHERE s.table_name = 'canopy.zones'::regclass
                               AND s.shardid = get_shard_id_for_distribution_column('canopy.zones', \(alice))
                            """, logger: TestDatabase.logger).collect()
                        return "moved"
                    } catch let error as PSQLError {
                        return error.serverInfo?[.sqlState] ?? String(reflecting: error)
                    }
                }
            }
        }
        #expect(move == "55P03", "the move waited for the acceptance until its lock timeout (55P03), it did not run beside it: \(move)")
    }

    struct Saves: Sendable, CustomStringConvertible {
        var saved: Set<String> = []
        var refusedDuringTheMove: [String] = []
        var refusedOutsideTheMove: [String] = []
        var beforeMove = 0
        var duringMove = 0
        var afterMove = 0
        var description: String {
            "\(saved.count) saved, \(beforeMove) before the move, \(duringMove) during it, \(afterMove) after it, "
                + "\(refusedDuringTheMove.count) refused during it, \(refusedOutsideTheMove.count) outside it"
        }
    }

    /// One record a request into "Moving", until five saves after the move
    /// ended (a deadline, should the move never end).
    static func saveThroughTheGateway(
        _ client: any TestClientProtocol, token: String, moveStarted: NIOLockedValueBox<Bool>, moveEnded: NIOLockedValueBox<Bool>
    ) async throws -> Saves {
        var saves = Saves()
        let deadline = ContinuousClock.now + .seconds(240)
        var index = 0
        while saves.afterMove < 5 && ContinuousClock.now < deadline {
            let name = "through-\(index)"
            index += 1
            let started = moveStarted.withLockedValue { $0 }
            let endedBefore = moveEnded.withLockedValue { $0 }
            let answer = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Moving"}, save: $s) { saved { recordName } errors { code message } } }
                """, ["s": [fast(name, hours: index, end: Int64(index))]], token: token)
            if (answer.object["saved"] as? [[String: Any]])?.first?["recordName"] as? String == name {
                saves.saved.insert(name)
            } else if started && !endedBefore {
                saves.refusedDuringTheMove.append("\(answer.body)")
            } else {
                saves.refusedOutsideTheMove.append("\(answer.body)")
            }
            if !started { saves.beforeMove += 1 }
            if started && !endedBefore { saves.duringMove += 1 }
            if moveEnded.withLockedValue({ $0 }) { saves.afterMove += 1 }
            try await Task.sleep(for: .milliseconds(20))
        }
        return saves
    }

    struct Placement: Sendable, CustomStringConvertible {
        var shard: Int64
        var to: Int32
        var now: Int32
        var description: String { "shard \(shard) to port \(to), now on \(now)" }
    }

    /// Moves the owner's shard group (by their records' shard) to the
    /// worker that does not hold it, once the writers have begun.
    static func moveShard(
        of owner: Int64, _ endpoint: DatabaseEndpoint, started: NIOLockedValueBox<Bool>, ended: NIOLockedValueBox<Bool>
    ) async throws -> Placement {
        try await Task.sleep(for: .milliseconds(500))
        return try await TestDatabase.withConnection(endpoint) { connection in
            let placement = try await connection.query("""
                SELECT s.shardid, s.nodename, s.nodeport, other.nodename, other.nodeport
                  FROM citus_shards s
                  JOIN pg_dist_node other ON other.groupid > 0 AND (other.nodename, other.nodeport) <> (s.nodename, s.nodeport)
                 WHERE s.table_name = 'canopy.records'::regclass
                   AND s.shardid = get_shard_id_for_distribution_column('canopy.records', \(owner))
                """, logger: TestDatabase.logger)
            var move: (Int64, String, Int32, String, Int32)?
            for try await row in placement.decode((Int64, String, Int32, String, Int32).self) { move = row }
            let (shard, fromHost, fromPort, toHost, toPort) = try #require(move)
            started.withLockedValue { $0 = true }
            defer { ended.withLockedValue { $0 = true } }
            try await connection.query(
                "SELECT citus_move_shard_placement(\(shard), \(fromHost), \(fromPort), \(toHost), \(toPort), shard_transfer_mode => 'block_writes')", logger: TestDatabase.logger
            )
            let now = try await connection.query("SELECT nodeport FROM citus_shards WHERE shardid = \(shard)", logger: TestDatabase.logger)
            var port: Int32 = 0
            for try await (value) in now.decode(Int32.self) { port = value }
            return Placement(shard: shard, to: toPort, now: port)
        }
    }
}
