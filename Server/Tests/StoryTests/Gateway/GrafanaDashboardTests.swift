@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import NIOCore
import Testing

/// The Grafana dashboard (docs/grafana/canopy.json, docs/DEPLOYMENT.md)
/// against a real `canopy serve`'s `/metrics`, after traffic that makes
/// every series appear: each metric a panel asks for exists, and each
/// metric Canopy exports has a panel.
@Suite("Grafana dashboard", .serialized, .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct GrafanaDashboardTests {
    static var dashboardPath: String { "\(Repository.root)/docs/grafana/canopy.json" }

    /// The metric names in a PromQL expression (a histogram's series by its family's name).
    static func metricNames(in expression: String) -> Set<String> {
        // A metric is followed by its selector or range; labels never are.
        let pattern = try! NSRegularExpression(pattern: #"\b((?:canopy|hb|http)_[a-z0-9_]+)[{\[]"#)
        let range = NSRange(expression.startIndex..., in: expression)
        return Set(pattern.matches(in: expression, range: range).compactMap { match in
            Range(match.range(at: 1), in: expression).map { String(expression[$0]) }
        })
    }

    /// Families in a Prometheus text exposition (`# TYPE name kind`), and
    /// their series' names (`_bucket`, `_count`, `_sum` too).
    static func exported(_ text: String) -> (families: Set<String>, series: Set<String>) {
        var families = Set<String>(), series = Set<String>()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                families.insert(String(line.split(separator: " ")[2]))
            } else if !line.hasPrefix("#"), let name = line.split(whereSeparator: { $0 == "{" || $0 == " " }).first {
                series.insert(String(name))
            }
        }
        return (families, series)
    }

    @Test("the dashboard is Grafana JSON whose every query names metrics canopy serve exports, and every Canopy metric has a panel")
    func dashboardMatchesMetrics() async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.dashboardPath))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "not a JSON object")
        #expect(dashboard["uid"] as? String == "canopy", "the dashboard's uid")
        let variables = ((dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]]) ?? []
        #expect(variables.contains { $0["name"] as? String == "datasource" && $0["type"] as? String == "datasource" },
                "no datasource variable: the dashboard would be bound to one Prometheus")
        let panels = ((dashboard["panels"] as? [[String: Any]]) ?? []).filter { $0["type"] as? String != "row" }
        #expect(panels.count >= 10, "only \(panels.count) panels")
        var asked = Set<String>()
        for panel in panels {
            let title = panel["title"] as? String ?? "?"
            #expect((panel["datasource"] as? [String: Any])?["uid"] as? String == "${datasource}", "panel \(title) is not on the datasource variable")
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(!targets.isEmpty, "panel \(title) asks nothing")
            for target in targets {
                let expression = target["expr"] as? String ?? ""
                let names = Self.metricNames(in: expression)
                #expect(!names.isEmpty, "panel \(title)'s query names no metric: \(expression)")
                asked.formUnion(names)
            }
            #expect(panel["description"] as? String != nil, "panel \(title) has no description")
        }

        // Traffic that makes every series exist: a refused token, a read
        // twice (the plan cache's miss, then hit), a webhook push, a write
        // refused for quota.
        let admin = try await TestDatabase.shared.migratedDatabase()
        let (user, token) = try await addUser("graf", on: admin)
        let webhooks = try await WebhookReceiver()
        let port = try EmbeddedCluster.freePort()
        let gateway = try CanopyBinary.serve(databaseURL: admin.url, port: port, ["--no-console", "--rate-limit", "0"])
        defer { kill(gateway.pid, SIGKILL); _ = gateway.waitBlocking(within: .seconds(5)) }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
        let call = { @Sendable (bearer: String, query: String) async throws -> String in
            try await TracingTests.call(port: port, token: bearer, query).body
        }
        _ = try await call("cnp_0000000000000000_not-a-real-secret-at-all-000000000000000", "{ me { userRecordName } }")
        _ = try await call(token.string, "mutation { registerDevice(kind: WEBHOOK, url: \"\(webhooks.url("graf"))\") { deviceID } }")
        _ = try await call(token.string, "mutation { saveSubscription(subscriptionID: \"all\", kind: DATABASE) { subscriptionID } }")
        _ = try await call(token.string, #"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: [{recordName: "a", recordType: "Note", fields: {n: 1}}]) { saved { recordName } } }"#)
        for _ in 0..<2 {
            _ = try await call(token.string, #"{ records(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, recordType: "Note") { records { recordName } } }"#)
        }
        #expect(await eventually(timeout: .seconds(60)) { await webhooks.log.count() >= 1 }, "no webhook arrived")
        try await TestDatabase.withConnection(admin) { connection in
            _ = try await connection.texts("UPDATE canopy.storage_usage SET quota_bytes = 1, has_quota = true WHERE user_id = \(user.id)")
        }
        let refused = try await call(token.string, #"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: [{recordName: "b", recordType: "Note", fields: {n: 2}}]) { errors { code } } }"#)
        #expect(refused.contains("QUOTA_EXCEEDED"), "\(refused)")

        let metrics = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(10))
        let text = String(buffer: try await metrics.body.collect(upTo: 1 << 22))
        let (families, series) = Self.exported(text)
        // Two counters appear only after their event: a plan evicted, a
        // cached plan that differed from a fresh one (a bug). Their names
        // are checked against the code that makes them instead.
        let afterTheirEvent: Set = ["canopy_plan_cache_evictions_total", "canopy_plan_cache_mismatches_total"]
        let planCacheSource = try String(contentsOfFile: "\(Repository.root)/Server/Sources/CanopyGateway/Operations/PlanCache.swift", encoding: .utf8)
        for name in asked.sorted() {
            if afterTheirEvent.contains(name) {
                #expect(planCacheSource.contains("\"\(name)\""), "PlanCache.swift makes no metric \(name)")
                continue
            }
            #expect(families.contains(name) || series.contains(name), "the dashboard asks for \(name), which /metrics does not have:\n\(families.sorted())")
        }
        // Every Canopy metric on a panel (Hummingbird's: the request ones are).
        for family in families.sorted() where family.hasPrefix("canopy_") {
            #expect(asked.contains(family) || asked.contains { $0.hasPrefix(family + "_") }, "/metrics has \(family), which no panel shows")
        }
        print("grafana dashboard: \(panels.count) panels over \(asked.count) metrics; /metrics has \(families.count) families")
    }
}
