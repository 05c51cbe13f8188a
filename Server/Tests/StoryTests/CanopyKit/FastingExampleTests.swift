@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyKit
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing

/// The example app (Server/Examples/Fasting), run as two people in two terminals
/// would: the seed's story from the first fast to watching each other's.
@Suite("The fasting example", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct FastingExampleTests {
    static var binary: String { "\(Repository.root)/.build/debug/fasting" }

    @Test("two people share a log and watch each other's fasts arrive")
    func story() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.binary), "build the example (swift build)")
        let server = try await LiveServer.start()
        let alice = try server.user("alice", email: "alice@example.com")
        let bob = try server.user("bob", email: "bob@example.com")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("fasting-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        func fasting(_ token: String, _ profile: String, _ arguments: [String]) throws -> Subprocess.Result {
            try Subprocess.start(Self.binary, arguments + ["--server", server.baseURL.absoluteString, "--profile", profile],
                                 environment: ["FASTING_TOKEN": token, "FASTING_HOME": home, "PATH": "/usr/bin:/bin"]).wait()
        }

        // Alice logs two fasts and shares her log with Bob.
        var result = try fasting(alice.token, "alice", ["add", "--hours", "16", "--ended", "2026-11-20T08:00:00Z", "--note", "water only"])
        #expect(result.succeeded && result.output.contains("16 h"), "\(result.output)")
        result = try fasting(alice.token, "alice", ["add", "--hours", "18", "--ended", "2026-11-22T09:30:00Z", "--tag", "weekend"])
        #expect(result.succeeded, "\(result.output)")
        result = try fasting(alice.token, "alice", ["share", "--email", "bob@example.com"])
        let url = try #require(result.output.split(separator: "\n").first { $0.contains("/share/") }.map(String.init), "\(result.output)")

        // Bob accepts, sees her fasts, and adds one to her log.
        result = try fasting(bob.token, "bob", ["accept", url])
        #expect(result.succeeded && result.output.contains("2 fasts"), "\(result.output)")
        result = try fasting(bob.token, "bob", ["list"])
        #expect(result.output.contains("water only") && result.output.contains("#weekend"), "\(result.output)")
        result = try fasting(bob.token, "bob", ["add", "--shared", "--hours", "14", "--note", "with Alice"])
        #expect(result.succeeded, "\(result.output)")
        result = try fasting(alice.token, "alice", ["list"])
        #expect(result.output.contains("with Alice"), "Alice sees Bob's fast in her log: \(result.output)")

        // Bob watches; Alice's next fast appears in his terminal while it runs.
        let watcher = try Subprocess.start(Self.binary, ["sync", "--watch", "--seconds", "20", "--server", server.baseURL.absoluteString, "--profile", "bob"],
                                           environment: ["FASTING_TOKEN": bob.token, "FASTING_HOME": home, "PATH": "/usr/bin:/bin"])
        // Long enough for the watcher to have synced and subscribed on a loaded machine.
        try await Task.sleep(for: .seconds(6))
        result = try fasting(alice.token, "alice", ["add", "--hours", "20", "--note", "longest yet"])
        #expect(result.succeeded, "\(result.output)")
        let watched = try watcher.wait()
        #expect(watched.output.contains("watching") && watched.output.contains("+") && watched.output.contains("longest yet"), "\(watched.output)")

        // Bad input is refused with what was wrong.
        result = try fasting(alice.token, "alice", ["add", "--hours", "0"])
        #expect(!result.succeeded && result.output.contains("--hours must be between 1 and 240"), "\(result.output)")
        result = try fasting(bob.token, "bob", ["accept", "https://example.com/nothing"])
        #expect(!result.succeeded && result.output.contains("is not a share URL"), "\(result.output)")
        result = try fasting("cnp_0000000000000000_bad", "eve", ["list"])
        #expect(!result.succeeded && result.output.contains("NOT_AUTHENTICATED"), "\(result.output)")
    }
}
