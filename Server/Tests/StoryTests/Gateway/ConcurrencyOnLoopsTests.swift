@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyTestSupport
import Foundation
import NIOCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `canopy serve --concurrency-on-loops` (issue 69; DECISIONS 197) as an
/// operator runs it: Swift concurrency's global executor is replaced for
/// the whole process, so only the real binary can show it. The gateway
/// says it is on in `/metrics`, answers HTTP as without it, delivers a
/// live subscription's change (Python's gql over graphql-transport-ws),
/// and stops on SIGTERM with status 0.
@Suite("canopy serve --concurrency-on-loops", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct ConcurrencyOnLoopsTests {
    @Test("with the flag the loops run Swift's jobs (canopy_concurrency_on_loops 1; 0 without), HTTP and a live subscription are answered, and SIGTERM stops it cleanly")
    func servesWithConcurrencyOnLoops() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        let script = "\(Repository.root)/Server/Tests/python/gql_subscription.py"
        for onLoops in [false, true] {
            // A user a round: the script saves the same record in the same zone.
            let (_, token) = try await addUser(onLoops ? "looped" : "pooled", on: admin)
            let port = try EmbeddedCluster.freePort()
            let gateway = try CanopyBinary.serve(
                databaseURL: admin.url, port: port, [onLoops ? "--concurrency-on-loops" : "--no-concurrency-on-loops", "--rate-limit", "0"])
            defer { kill(gateway.pid, SIGKILL); _ = gateway.waitBlocking(within: .seconds(5)) }
            #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")

            let metrics = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(10))
            let text = String(buffer: try await metrics.body.collect(upTo: 1 << 20))
            #expect(text.contains("canopy_concurrency_on_loops \(onLoops ? 1 : 0)"), "\(text)")

            // The gql script follows the zone "FromPython" from the token
            // read here, and commits its record after subscribing.
            _ = try await TracingTests.call(port: port, token: token.string, #"mutation { saveZone(zoneName: "FromPython") { zoneName } }"#)
            for _ in 0..<4 {
                let answer = try await TracingTests.call(port: port, token: token.string, "{ zones(scope: PRIVATE) { zoneName } }").body
                #expect(answer.contains("FromPython"), "\(answer)")
            }
            let changes = try await TracingTests.call(
                port: port, token: token.string, #"{ zoneChanges(scope: PRIVATE, zone: {zoneName: "FromPython"}) { token } }"#
            ).body
            let since = try #require(
                ((try JSONSerialization.jsonObject(with: Data(changes.utf8)) as? [String: Any])?["data"] as? [String: Any])
                    .flatMap { ($0["zoneChanges"] as? [String: Any])?["token"] as? String },
                "\(changes)")
            let result = try await Subprocess.start("/usr/bin/env", ["python3", script, "http://127.0.0.1:\(port)/graphql", token.string, since]).finished()
            if !result.succeeded {
                // What the feed holds after the token, and what the gateway said.
                let after = try await TracingTests.call(
                    port: port, token: token.string,
                    "{ zoneChanges(scope: PRIVATE, zone: {zoneName: \"FromPython\"}, since: \"\(since)\") { changed { recordName } } }"
                ).body
                let said = (try? String(contentsOfFile: gateway.outputPath, encoding: .utf8)) ?? ""
                Issue.record("the gql subscription failed; the feed after its token: \(after)\n\(result.output)\ncanopy serve said: \(said)")
            }
            let line = result.output.split(separator: "\n").last.map(String.init) ?? ""
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            let changed = ((json["event"] as? [String: Any])?["zoneChanged"] as? [String: Any])?["changed"] as? [[String: Any]]
            #expect(changed?.compactMap { $0["recordName"] as? String } == ["live1"], "\(result.output)")

            kill(gateway.pid, SIGTERM)
            let stopped = try await gateway.wait(within: .seconds(30))
            #expect(stopped.status == 0, "canopy serve stopped on SIGTERM with status 0: \(stopped.status)\n\(stopped.output)")
            #expect(stopped.output.contains("Swift concurrency runs on the event loops") == onLoops, "\(stopped.output)")
        }
    }
}
