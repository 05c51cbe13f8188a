@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The example web app (`Server/Examples/TodoWeb`, issues 40 and 52) in a real
/// headless Chromium, driven by Selenium (`Server/Tests/python/todo_web_story.py`),
/// as a developer runs it: `canopy serve --cors-origin --auth-config` on one
/// port, the app's folder served by `python3 -m http.server` on another
/// origin, CanopyJS imported from the gateway, people signing in with the
/// test provider (`identity_provider.py`, the code flow with PKCE). Two
/// people share a list (a permission chosen, the link copied), see each
/// other's edits live, and one edits offline (kept in IndexedDB) and
/// catches up, and through a gateway away for 70 s (issue 50) is told it
/// waits, reloads the page with the gateway away (CanopyJS from the
/// service worker's cache, issue 68) and catches up by itself. Screenshots of every step are kept in
/// `.build/test-artifacts/todo-web/` (or `$CANOPY_TEST_ARTIFACTS`).
@Suite("Example web app in a real browser", .serialized, .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct TodoWebExampleTests {
    static var artifacts: String {
        let root = ProcessInfo.processInfo.environment["CANOPY_TEST_ARTIFACTS"] ?? "\(Repository.root)/.build/test-artifacts"
        return "\(root)/todo-web"
    }

    @Test("alice and bob sign in with the provider; alice makes a list and shares it by email with a permission, copying the link; bob opens it and sees whose it is; each sees the other's edits live; bob's offline tick and new item show at once and reach alice when he is back, merged with her rename of the same item; the service worker registers and a reload with the gateway away opens the app from its cache")
    func wholeStory() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let port = try EmbeddedCluster.freePort()
        var appPort = try EmbeddedCluster.freePort()
        while appPort == port { appPort = try EmbeddedCluster.freePort() }
        let appURL = "http://127.0.0.1:\(appPort)/"
        let provider = try IdentityProviderProcess()
        let authConfig = FileManager.default.temporaryDirectory.appendingPathComponent("todo-web-auth-\(appPort).json").path
        let config: [String: Any] = ["providers": [[
            "name": "idp", "issuer": IdentityProviderProcess.issuer, "audiences": ["web"], "jwksURL": provider.jwksURL,
            "signIn": ["authorizationURL": provider.authorizationURL, "tokenURL": provider.tokenURL, "clientID": "web", "label": "Sign in with Test IdP"],
        ]]]
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: authConfig))
        defer { try? FileManager.default.removeItem(atPath: authConfig) }
        let server = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, ["--cors-origin", "http://127.0.0.1:\(appPort)", "--auth-config", authConfig])
        defer { kill(server.pid, SIGKILL); _ = try? server.wait() }
        // Any static server will do: the app is plain files.
        let app = try Subprocess.start("/usr/bin/env", [
            "python3", "-m", "http.server", String(appPort), "--bind", "127.0.0.1", "--directory", "\(Repository.root)/Server/Examples/TodoWeb",
        ])
        defer { kill(app.pid, SIGKILL); _ = try? app.wait() }
        let ready = try await CanopyBinary.waitUntilServing(port: port, attempts: 150)
        try #require(ready, "canopy serve answered /health")
        let served = try await CanopyBinary.waitUntilAnswering(appURL)
        try #require(served, "python3 -m http.server served the app")
        try? FileManager.default.removeItem(atPath: Self.artifacts)
        let story = try await Subprocess.start("/usr/bin/env", [
            "python3", "\(Repository.root)/Server/Tests/python/todo_web_story.py",
            "http://127.0.0.1:\(port)", appURL, provider.controlURL, "bob@example.com", Self.artifacts,
        ]).exit()
        #expect(story.succeeded, "\(story.output)")
        #expect(story.output.contains("the example web app's story passed"), "\(story.output)")
        let screenshots = try FileManager.default.contentsOfDirectory(atPath: Self.artifacts).filter { $0.hasSuffix(".png") && $0.first?.isNumber == true }
        #expect(screenshots.count == 16, "a screenshot of every step: \(screenshots.sorted())")
    }
}
