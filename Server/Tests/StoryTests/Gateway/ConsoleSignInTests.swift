@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyIdentity
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import Testing

/// The console's "Sign in with …" (docs/API.md §12 with §10): a real headless
/// Chromium goes through a provider's `/authorize` (real signed id tokens,
/// keys served over HTTP), comes back to the console on the real
/// Hummingbird stack, trades the id token (with its nonce) for a Canopy
/// token, and accepts the invitation it started from.
@Suite("Web console: signing in with a provider")
struct ConsoleSignInTests {
    @Test("an invited person signs in with the provider from the invitation page, comes back to it and accepts; a sign-in answer the tab did not start is refused")
    func signInAndAccept() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try IdentityProviderProcess()
        try await provider.signInAs(IdentityProviderProcess.olivia)
        let idp = provider.browserProvider(codeFlow: false)
        let verifier = await TokenVerifier(configuration: AuthConfiguration(providers: [idp]), logger: harness.logs.logger())
        let configuration = GatewayConfiguration(
            port: 0, console: try ConsoleFiles.load(directory: "\(Repository.root)/web"),
            clientPackage: try ConsoleFiles.load(directory: "\(Repository.root)/clients/js", required: "index.js"), signInProviders: [idp]
        )
        try await harness.test(configuration: configuration, live: true, identity: verifier) { client in
            let port = try #require(client.port)
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", #"mutation { saveZone(zoneName: "Garden") { zoneName } }"#, token: alice)
            _ = try await save(client, token: alice, zone: "Garden", [["recordName": "rose", "recordType": "Plant", "fields": ["name": "Rose"]]])
            let share = try await client.call("saveShare", #"mutation { saveShare(zoneName: "Garden", participants: [{email: "olivia@example.com", permission: READ_WRITE}]) { url } }"#, token: alice)
            let url = try #require(share.object["url"] as? String)
            let path = String(url[try #require(url.range(of: "/share/")).lowerBound...])

            let artifacts = "\(WebConsoleArtifacts.root)/web-sign-in"
            let result = try await Subprocess.start("/usr/bin/env", [
                "python3", "\(Repository.root)/Server/Tests/python/web_sign_in.py", "http://127.0.0.1:\(port)", path, artifacts,
            ]).finished()
            #expect(result.succeeded, "\(result.output)")
            #expect(result.output.contains(#""name": "Olivia""#), "\(result.output)")

            let asked = try await provider.authorizations()
            let first = try #require(asked.first)
            #expect(first["response_type"] == "id_token" && first["client_id"] == "web")
            #expect(first["redirect_uri"] == "http://127.0.0.1:\(port)/")
            #expect(first["scope"]?.split(separator: " ").contains("openid") == true)
            let nonce = first["nonce"] ?? ""
            #expect(nonce.count == 64 && nonce.allSatisfy(\.isHexDigit), "the provider gets the nonce's SHA-256, never the nonce: \(nonce)")
            #expect((first["state"] ?? "").count >= 32)
        }
    }
}

/// Where browser tests keep their screenshots: `$CANOPY_TEST_ARTIFACTS`,
/// else `.build/test-artifacts`.
enum WebConsoleArtifacts {
    static var root: String {
        ProcessInfo.processInfo.environment["CANOPY_TEST_ARTIFACTS"] ?? "\(Repository.root)/.build/test-artifacts"
    }
}
