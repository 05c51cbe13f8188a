@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `canopy serve --serve-on-loop` (issue 69) as an operator runs it: the
/// flag reaches the gateway (its loops' own connections show in
/// `pg_stat_activity` as `canopy loop N`), requests are answered as
/// without it, and a bad `--loop-connections` is refused before serving.
@Suite("canopy serve --serve-on-loop", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct ServeOnLoopTests {
    @Test("with the flag, requests are answered through each loop's own connections (pg_stat_activity names them); without it, none; --loop-connections 0 is refused")
    func servesOnLoops() async throws {
        let refused = try CanopyBinary.run(["serve", "--database-url", "postgres://nobody@127.0.0.1:1/none", "--serve-on-loop", "--loop-connections", "0"])
        #expect(!refused.succeeded && refused.output.contains("--loop-connections must be from 1 to 1000"), "\(refused.output)")

        let admin = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("looper", on: admin)
        // Without the flag first: a loop's connections seen afterwards are
        // then the flagged gateway's, never a stopped one's still closing.
        for onLoop in [false, true] {
            let port = try EmbeddedCluster.freePort()
            let gateway = try CanopyBinary.serve(databaseURL: admin.url, port: port, [onLoop ? "--serve-on-loop" : "--no-serve-on-loop", "--rate-limit", "0"])
            defer { kill(gateway.pid, SIGKILL); _ = gateway.waitBlocking(within: .seconds(5)) }
            #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
            let zone = onLoop ? "OnLoop" : "OffLoop"
            _ = try await TracingTests.call(port: port, token: token.string, "mutation { saveZone(zoneName: \"\(zone)\") { zoneName } }")
            for _ in 0..<4 {
                let answer = try await TracingTests.call(port: port, token: token.string, "{ zones(scope: PRIVATE) { zoneName } }").body
                #expect(answer.contains(zone), "\(answer)")
            }
            let loopConnections = try await TestDatabase.withConnection(admin) { connection in
                try await connection.texts("SELECT count(*)::text FROM pg_stat_activity WHERE application_name LIKE 'canopy loop %'")
            }
            if onLoop {
                #expect((Int((loopConnections.first ?? nil) ?? "") ?? 0) >= 1, "the loops' connections: \(loopConnections)")
            } else {
                #expect(loopConnections == ["0"], "without the flag, no loop has connections: \(loopConnections)")
            }
            kill(gateway.pid, SIGTERM)
            #expect(gateway.waitBlocking(within: .seconds(30)) != nil, "canopy serve stopped on SIGTERM")
        }
    }
}
