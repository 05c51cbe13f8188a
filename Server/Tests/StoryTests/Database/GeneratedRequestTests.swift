@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyTestSupport
import Foundation
import Testing

/// Issue 48's property: no request reaches an internal error. Requests
/// generated from the schema (hypothesis-graphql) and from the Web Services
/// reference's shapes, with hostile strings, numbers at every bound and
/// names at their limits, signed in and anonymous, go to a live
/// `canopy serve`; no answer may be INTERNAL_ERROR or a 5xx, and the server
/// must still answer afterwards (`Server/Tests/python/generated_requests.py`).
/// `make test` runs a small, seeded budget; `make fuzz-http` a long one.
/// It starts `canopy serve` and Python, so it is a story (docs/TESTING.md).
@Suite("Generated requests", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct GeneratedRequestTests {
    static let container = "iCloud.com.example"

    @Test("requests generated from the schema and the Web Services shapes never answer INTERNAL_ERROR or a 5xx, and the server keeps answering")
    func noInternalErrors() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["CANOPY_GENERATED_SEED"] ?? "48"
        let examples = environment["CANOPY_GENERATED_EXAMPLES"] ?? "150"
        let seconds = environment["CANOPY_GENERATED_SECONDS"] ?? "120"
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let port = 21000 + Int(getpid() % 19000)
        let server = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, [
            "--container", Self.container, "--rate-limit", "0", "--anonymous-rate-limit", "0", "--no-console",
        ])
        defer { kill(server.pid, SIGTERM); _ = try? server.wait() }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "the server answered /health")
        let add = try CanopyBinary.run(["users", "add", "generated", "--json", "--database-url", endpoint.url])
        #expect(add.succeeded, "\(add.output)")
        let line = add.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let token = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["token"] as? String, "\(add.output)")
        let api = try CanopyBinary.run(["tokens", "api", "add", "--container", Self.container, "--name", "generated", "--json", "--database-url", endpoint.url])
        let apiLine = api.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let apiToken = try #require((try JSONSerialization.jsonObject(with: Data(apiLine.utf8)) as? [String: Any])?["token"] as? String, "\(api.output)")
        let script = "\(Repository.root)/Server/Tests/python/generated_requests.py"
        let run = try await Subprocess.start("/usr/bin/env", [
            "python3", script, "--url", "http://127.0.0.1:\(port)", "--token", token, "--api-token", apiToken, "--container", Self.container,
            "--seed", seed, "--examples", examples, "--seconds", seconds,
        ]).finished()
        let closing = run.output.split(separator: "\n").last { $0.hasPrefix("generated-requests:") } ?? ""
        #expect(run.succeeded && closing.hasSuffix(" 0 failed"), "seed \(seed): \(run.output.suffix(4000))")
        let sent = Int(closing.split(separator: " ").dropFirst().first ?? "") ?? 0
        #expect(sent >= 100, "the run sent \(sent) requests: \(run.output.suffix(2000))")
    }
}
