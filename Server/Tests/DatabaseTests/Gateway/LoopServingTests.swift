@testable import CanopyGatewayTestSupport
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import Testing

/// `--serve-on-loop` (issue 69): a connection's requests run on the event
/// loop that owns its socket, and reach the database through that loop's
/// own pool; anything not on a serving loop uses the shared pool, as
/// without the flag. The whole gateway suite runs in this mode in the
/// on-loop tier (scripts/test-tier.sh on-loop); these check the mode itself.
@Suite("Serving on the sockets' loops")
struct LoopServingTests {
    @Test("on a serving loop the primary's pool is that loop's, its connections on that loop, a deadline's work too; off every loop, the shared pool's")
    func poolsFollowTheLoop() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let loops = ServingLoops(group: EventLoopGroupProvider.singleton.eventLoopGroup)
        #expect(loops.loops.count >= 1)
        let database = try RequestDatabase(
            endpoint: endpoint.asUser("canopy_gateway", password: nil), maximumConnections: 3, servingLoops: loops, loopConnections: 1,
            logger: Logger(label: "loop-serving-test")
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.primary.run() }
            defer { group.cancelAll() }
            for loop in loops.loops {
                let (connectionLoop, ranOnLoop) = try await loops.pin(loop) {
                    let ranOnLoop = loop.inEventLoop
                    let connectionLoop = try await database.primary.withConnection { connection in
                        // The deadline's work task, started here: on the loop too.
                        (connection.eventLoop, loop.inEventLoop)
                    }
                    return (connectionLoop, ranOnLoop && connectionLoop.1)
                }
                #expect(connectionLoop.0 === loop, "the leased connection lives on the request's loop")
                #expect(ranOnLoop, "the pinned body and the deadline's work ran on the loop")
            }
            let leases = database.primary.loopLeases
            #expect(leases == loops.loops.count)
            _ = try await database.primary.withConnection { _ in 1 }
            #expect(database.primary.loopLeases == leases, "off every loop: the shared pool")
        }
    }

    @Test("served on its loop, a request reads through its loop's pool and answers as without the flag; a WebSocket session too")
    func requestsUseTheirLoopsPool() async throws {
        let harness = try await GatewayHarness.make()
        let alice = harness.aliceToken
        for onLoop in [true, false] {
            let zone = onLoop ? "OnLoop" : "OffLoop"
            let (zones, leases) = try await harness.test(live: true, servingOnLoop: onLoop) { client, database in
                _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"\(zone)\") { zoneName } }", token: alice)
                let zones = try await client.call("zones", "{ zones(scope: PRIVATE) { zoneName } }", token: alice)
                try await client.subscriptionSocket(token: alice) { inbox, send in
                    try await send("{\"type\":\"connection_init\"}")
                    #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                    try await send(try subscribeMessage(id: "feed", "subscription { zoneChanged(scope: PRIVATE, zone: {zoneName: \"\(zone)\"}) { changed { recordName } } }"))
                    // The zone is empty (no first page): a save wakes the feed.
                    _ = try await client.call("modifyRecords", """
                        mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "\(zone)"}, save: [{recordName: "r\(onLoop)", recordType: "Note", fields: {n: 1}}]) { saved { recordName } } }
                        """, token: alice)
                    let page = try await inbox.next()
                    #expect(page?["type"] as? String == "next" && "\(page ?? [:])".contains("r\(onLoop)"), "\(String(describing: page))")
                }
                return (zones.list.compactMap { $0["zoneName"] as? String }.sorted(), database.primary.loopLeases)
            }
            #expect(zones.contains(zone) && zones.contains("_defaultZone"), "\(zones)")
            if onLoop {
                #expect(leases >= 4, "each request's statements went through its loop's pool: \(leases)")
            } else {
                #expect(leases == 0)
            }
        }
    }

    @Test("in the on-loop tier, every harness gateway serves on its loops", .enabled(if: GatewayHarness.servingOnLoop, "the on-loop tier sets CANOPY_TEST_SERVE_ON_LOOP=1"))
    func tierServesOnLoops() async throws {
        let harness = try await GatewayHarness.make()
        let leases = try await harness.test { client, database in
            _ = try await client.call("me", "{ me { userRecordName } }", token: harness.aliceToken)
            return database.primary.loopLeases
        }
        #expect(leases >= 1, "the tier's gateways reach the database through their loops' pools")
    }
}
