@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The web console's whole story (issue 17) in a real headless Chromium,
/// driven by Selenium (`Server/Tests/python/web_console.py`), against `canopy
/// serve` as a separate process: two people in two browser sessions share
/// a zone, accept, are refused edits, see live changes and a conflict, a
/// stranger learns nothing, the owner removes the invitee and stops
/// sharing. Screenshots of every step are kept in
/// `.build/test-artifacts/web-console/` (or `$CANOPY_TEST_ARTIFACTS`).
@Suite("Web console in a real browser", .serialized, .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct WebConsoleTests {
    static var artifacts: String {
        let root = ProcessInfo.processInfo.environment["CANOPY_TEST_ARTIFACTS"] ?? "\(Repository.root)/.build/test-artifacts"
        return "\(root)/web-console"
    }

    @Test("an owner shares a zone from the console; the invitee accepts at the invitation page, reads but cannot edit, sees live edits, and loses the zone when removed; a stranger learns nothing")
    func wholeStory() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let port = 23000 + Int(getpid() % 20000)
        let assets = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-console-assets-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: assets) }
        let server = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, [
            "--web-dir", "\(Repository.root)/web", "--access-log", "--asset-dir", assets,
        ])
        var stopped = false
        defer { if !stopped { kill(server.pid, SIGKILL) } }
        let ready = try await CanopyBinary.waitUntilServing(port: port, attempts: 150)
        try #require(ready, "canopy serve answered /health")
        func token(_ arguments: [String]) throws -> String {
            let added = try CanopyBinary.run(["users", "add"] + arguments + ["--json", "--database-url", endpoint.url])
            try #require(added.succeeded, "\(added.output)")
            let object = try JSONSerialization.jsonObject(with: Data(added.output.utf8)) as? [String: Any]
            return try #require(object?["token"] as? String)
        }
        let owner = try token(["alice"]), invitee = try token(["invitee", "--email", "invitee@example.com"]), stranger = try token(["carol"])
        try? FileManager.default.removeItem(atPath: Self.artifacts)
        let story = try Subprocess.start("/usr/bin/env", [
            "python3", "\(Repository.root)/Server/Tests/python/web_console.py",
            "http://127.0.0.1:\(port)", owner, invitee, stranger, Self.artifacts,
        ]).wait()
        #expect(story.succeeded, "\(story.output)")
        let screenshots = try FileManager.default.contentsOfDirectory(atPath: Self.artifacts).filter { $0.hasSuffix(".png") && $0.first?.isNumber == true }
        #expect(screenshots.count == 28, "a screenshot of every step: \(screenshots.sorted())")

        // Every request was logged, and no token is in the log: the console
        // keeps tokens in headers and the WebSocket's first message, never in a URL.
        kill(server.pid, SIGTERM)
        let log = try server.wait()
        stopped = true
        #expect(log.output.contains("/graphql") && log.output.contains("/share/"), "the access log was on")
        for secret in [owner, invitee, stranger] {
            #expect(!log.output.contains(secret) && !log.output.contains(String(secret.suffix(20))), "a token is in the server's log")
        }
    }

    /// The public database's section (issue 36): signed in, greyed where the
    /// grants refuse, and signed out. Screenshots in
    /// `.build/test-artifacts/web-public/`.
    @Test("the Public section: alice creates a post where the grants allow, Notice's New record is greyed, bob reads alice's post only, and signed out the page shows what everyone may read")
    func publicDatabase() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let port = 23001 + Int(getpid() % 20000)
        let server = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, ["--web-dir", "\(Repository.root)/web"])
        defer { kill(server.pid, SIGKILL) }
        let ready = try await CanopyBinary.waitUntilServing(port: port, attempts: 150)
        try #require(ready, "canopy serve answered /health")
        func token(_ name: String) throws -> String {
            let added = try CanopyBinary.run(["users", "add", name, "--json", "--database-url", endpoint.url])
            try #require(added.succeeded, "\(added.output)")
            let object = try JSONSerialization.jsonObject(with: Data(added.output.utf8)) as? [String: Any]
            return try #require(object?["token"] as? String)
        }
        let alice = try token("alice"), bob = try token("bob")
        _ = try token("mod")
        let schema = FileManager.default.temporaryDirectory.appendingPathComponent("public-\(UUID().uuidString).ckdb").path
        try """
            DEFINE SCHEMA
                CREATE ROLE Moderator;
                RECORD TYPE Notice (title STRING, GRANT READ TO "_world", GRANT CREATE, WRITE TO "Moderator");
                RECORD TYPE Post (title STRING QUERYABLE SORTABLE);
            """.write(toFile: schema, atomically: true, encoding: .utf8)
        let applied = try CanopyBinary.run(["schema", "apply", schema, "--database-url", endpoint.url, "--migrations-dir", TestDatabase.migrationsDirectory])
        try #require(applied.succeeded, "\(applied.output)")
        let role = try CanopyBinary.run(["roles", "add", "Moderator", "mod", "--database-url", endpoint.url])
        try #require(role.succeeded, "\(role.output)")
        let artifacts = Self.artifacts.replacingOccurrences(of: "web-console", with: "web-public")
        try? FileManager.default.removeItem(atPath: artifacts)
        let story = try Subprocess.start("/usr/bin/env", [
            "python3", "\(Repository.root)/Server/Tests/python/web_public.py", "http://127.0.0.1:\(port)", alice, bob, artifacts,
        ]).wait()
        #expect(story.succeeded, "\(story.output)")
        let screenshots = try FileManager.default.contentsOfDirectory(atPath: artifacts).filter { $0.hasSuffix(".png") && $0.first?.isNumber == true }
        #expect(screenshots.count == 7, "a screenshot of every step: \(screenshots.sorted())")
    }
}
