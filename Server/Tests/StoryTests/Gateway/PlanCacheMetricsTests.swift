@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import NIOCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The plan cache's counters on `canopy serve`'s `/metrics` (Prometheus),
/// as an operator reads them: the metrics system is set up once per
/// process, so this runs the real binary.
@Suite("canopy serve: the plan cache's metrics", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct PlanCacheMetricsTests {
    @Test("one miss then one hit of a lookup show on /metrics, and with an operation the cache does not serve, on canopy_plans_total; --plan-cache-size refuses a negative size")
    func metrics() async throws {
        let refused = try CanopyBinary.run(["serve", "--database-url", "postgres://nobody@127.0.0.1:1/none", "--plan-cache-size=-1"])
        #expect(!refused.succeeded && refused.output.contains("--plan-cache-size must be 0 or more"), "\(refused.output)")

        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("metered", on: endpoint)
        let port = 20000 + Int((getpid() + 11) % 20000)
        let started = try CanopyBinary.serve(databaseURL: endpoint.url, port: port)
        defer { kill(started.pid, SIGTERM) }
        #expect(try await CanopyBinary.waitUntilServing(port: port, attempts: 150), "the server answered /health")
        let lookup = #"{"query": "{ lookup(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordNames: [\"x\"]) { recordName error { code } } }"}"#
        let zones = #"{"query": "{ zones(scope: PRIVATE) { zoneName } }"}"#
        for (document, answer) in [(lookup, "UNKNOWN_ITEM"), (lookup, "UNKNOWN_ITEM"), (zones, "_defaultZone")] {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/graphql")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Authorization", value: "Bearer \(token.string)")
            request.body = .bytes(ByteBuffer(string: document))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
            #expect(body.contains(answer), "\(body)")
        }
        let metrics = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(10))
        let text = String(buffer: try await metrics.body.collect(upTo: 1 << 20))
        #expect(text.contains(#"canopy_plan_cache_misses_total{operation="lookup"} 1"#), "\(text)")
        #expect(text.contains(#"canopy_plan_cache_hits_total{operation="lookup"} 1"#), "\(text)")
        #expect(text.contains("canopy_plan_cache_entries 1"), "\(text)")
        // Every statement a request ran, by what planning did (issue 69, P1):
        // the hit rate over all of them, not only the cached operations'.
        #expect(text.contains(#"canopy_plans_total{outcome="miss"} 1"#), "\(text)")
        #expect(text.contains(#"canopy_plans_total{outcome="hit"} 1"#), "\(text)")
        #expect(text.contains(#"canopy_plans_total{outcome="uncached"} 1"#), "\(text)")
    }
}
