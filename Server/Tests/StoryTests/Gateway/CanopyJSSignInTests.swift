@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyIdentity
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// CanopyJS's `container.signIn` (issue 52, item 1) in a real headless
/// Chromium: a page on another origin (`clients/js/test/browser/`, served by
/// `python3 -m http.server`) imports CanopyJS from the gateway (the real
/// Hummingbird stack, CORS for that origin) and signs in with the test
/// provider (`identity_provider.py`: real signed id tokens, keys served
/// over HTTP, the code flow with PKCE and refresh tokens), by redirect and
/// by popup; the session survives a reload, is renewed when the server
/// stops accepting its token, and sign-out revokes it before `signOut()`
/// resolves, pausing an open SyncedDatabase until the same user is back;
/// with the server away the page names its offline store from the session
/// (`Server/Tests/python/canopyjs_sign_in.py` tells the story).
@Suite("CanopyJS: signing in with a provider")
struct CanopyJSSignInTests {
    @Test("a page signs in by redirect and by popup with PKCE; the session survives a reload, is renewed with the refresh token, and sign-out revokes it; a forged answer is refused")
    func signIn() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try IdentityProviderProcess()
        try await provider.signInAs(IdentityProviderProcess.olivia)
        let idp = provider.browserProvider(codeFlow: true)
        let verifier = await TokenVerifier(configuration: AuthConfiguration(providers: [idp]), logger: harness.logs.logger())
        let pagePort = try EmbeddedCluster.freePort()
        let pageOrigin = "http://127.0.0.1:\(pagePort)"
        let configuration = GatewayConfiguration(
            port: 0, crossOrigin: try CrossOriginPolicy(origins: [pageOrigin]),
            clientPackage: try ConsoleFiles.load(directory: "\(Repository.root)/clients/js", required: "index.js"), signInProviders: [idp]
        )
        let page = try Subprocess.start("/usr/bin/env", [
            "python3", "-m", "http.server", String(pagePort), "--bind", "127.0.0.1", "--directory", "\(Repository.root)/clients/js/test/browser",
        ])
        defer { kill(page.pid, SIGKILL); _ = try? page.wait() }
        let served = try await CanopyBinary.waitUntilAnswering("\(pageOrigin)/sign-in.html")
        try #require(served, "python3 -m http.server served the test page")
        try await harness.test(configuration: configuration, live: true, identity: verifier) { client in
            let port = try #require(client.port)
            let result = try await Subprocess.start("/usr/bin/env", [
                "python3", "\(Repository.root)/Server/Tests/python/canopyjs_sign_in.py",
                "\(pageOrigin)/sign-in.html", "http://127.0.0.1:\(port)", provider.controlURL, "\(WebConsoleArtifacts.root)/canopyjs-sign-in",
            ]).finished()
            #expect(result.succeeded, "\(result.output)")
            #expect(result.output.contains("CanopyJS sign-in passed"), "\(result.output)")
        }
    }
}
