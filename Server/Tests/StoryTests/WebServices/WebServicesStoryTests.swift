@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing

/// What a CloudKit web app does, through a real `canopy serve` answering
/// Web Services, with a Python client written only from Apple's reference
/// (Server/Tests/python/cloudkit_ws_client.py) and a real headless Chromium for
/// the person's sign-in: Server/Tests/python/web_services_story.py tells it.
@Suite("Web Services: a web app's story")
struct WebServicesStoryTests {
    @Test("sign in by the 421 redirect (a callback, and a window posting back to the app's page), query, CONFLICT on a stale tag, changes/zone with a syncToken, an asset in two steps, a share accepted by another person; a page doing what CloudKit JS does, notifications by the web courier included")
    func story() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (_, aliceToken) = try await addUser("alice", email: "alice@example.com", on: endpoint)
        let (_, bobToken) = try await addUser("bob", email: "bob@example.com", on: endpoint)
        // The sign-in page sends people back here (nothing listens: the
        // browser's address bar is read, on loopback).
        let made = try CanopyBinary.run([
            "tokens", "api", "add", "--container", WebServicesFixture.container, "--name", "web app",
            "--sign-in-callback", "http://127.0.0.1:9/signed-in", "--json", "--database-url", endpoint.url,
        ])
        #expect(made.succeeded, "\(made.output)")
        let line = made.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let apiToken = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["token"] as? String, "\(made.output)")
        let popup = try CanopyBinary.run([
            "tokens", "api", "add", "--container", WebServicesFixture.container, "--name", "popup", "--json", "--database-url", endpoint.url,
        ])
        let popupLine = popup.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let popupToken = try #require((try JSONSerialization.jsonObject(with: Data(popupLine.utf8)) as? [String: Any])?["token"] as? String, "\(popup.output)")
        let listed = try CanopyBinary.run(["tokens", "api", "list", "--database-url", endpoint.url])
        #expect(listed.output.contains("sign-in callback http://127.0.0.1:9/signed-in") && !listed.output.contains(String(apiToken.suffix(20))), "\(listed.output)")

        let assets = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-ws-story-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: assets) }
        let port = 20000 + Int((getpid() + 11) % 20000)
        // The app's page, another origin on loopback, which the sign-in page may post the token to.
        let appPort = 20000 + Int((getpid() + 13) % 20000)
        let started = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, [
            "--container", WebServicesFixture.container, "--asset-dir", assets, "--web-dir", "\(Repository.root)/web",
            "--cors-origin", "http://127.0.0.1:\(appPort)",
        ])
        defer { kill(started.pid, SIGTERM) }
        #expect(try await CanopyBinary.waitUntilServing(port: port, attempts: 150), "canopy serve answered /health")
        let result = try await Subprocess.start("/usr/bin/env", [
            "python3", "\(Repository.root)/Server/Tests/python/web_services_story.py", "http://127.0.0.1:\(port)", WebServicesFixture.container,
            apiToken, popupToken, String(appPort), aliceToken.string, bobToken.string, "bob@example.com",
            "\(WebConsoleArtifacts.root)/web-services-story",
        ]).finished()
        #expect(result.succeeded, "\(result.output)")
        let story = result.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let seen = try JSONSerialization.jsonObject(with: Data(story.utf8)) as? [String: Any] ?? [:]
        #expect(seen["conflict"] as? String == "CONFLICT" && seen["changes"] as? [String] == ["salad"] && seen["asset"] as? String == "ASSETID", "\(result.output)")
        #expect(Set(seen["bob_reads"] as? [String] ?? []) == ["soup", "salad", "soup-photo"], "\(result.output)")
        #expect(seen["page_notice"] as? String == "notes", "the CloudKit JS page's notification: \(result.output)")
        kill(started.pid, SIGTERM)
        let served = try await started.exit()
        #expect(served.status == 0, "\(served.output.suffix(2000))")
        #expect(!served.output.contains(aliceToken.string) && !served.output.contains(apiToken), "no credential in the server's log")
    }
}
