@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `canopy serve` as an operator runs it: a separate process that migrates,
/// answers a second, independent HTTP client (Python's standard library),
/// and stops cleanly on SIGTERM.
@Suite("canopy serve", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct ServeProcessTests {
    @Test("serves me to a bearer token and exits 0 on SIGTERM")
    func serveAndStop() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let port = 20000 + Int(getpid() % 20000)
        let started = try CanopyBinary.serve(databaseURL: endpoint.url, port: port)
        // serve migrated the empty database; now a user can get a token.
        let ready = try await CanopyBinary.waitUntilServing(port: port)
        #expect(ready, "the server answered /health")
        let add = try CanopyBinary.run(["users", "add", "carol", "--json", "--database-url", endpoint.url])
        #expect(add.succeeded, "\(add.output)")
        let token = try #require(add.output.split(separator: "\"").firstIndex(of: "token").map { add.output.split(separator: "\"")[$0 + 2] })
        let me = try python("""
            import json, urllib.request
            request = urllib.request.Request('http://127.0.0.1:\(port)/graphql',
                data=json.dumps({'query': '{ me { name } }'}).encode(),
                headers={'Authorization': 'Bearer \(token)', 'Content-Type': 'application/json'})
            print(json.load(urllib.request.urlopen(request))['data']['me']['name'])
            """)
        #expect(me.output.trimmingCharacters(in: .whitespacesAndNewlines) == "carol", "\(me.output)")

        kill(started.pid, SIGTERM)
        let result = try started.wait()
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("stopped"), "\(result.output)")
        #expect(!result.output.contains(String(token)), "the token is not in the server's log")
    }

    @Test("as root, an embedded cluster under a directory postgres cannot enter fails naming that directory and the fix",
          .enabled(if: geteuid() == 0, "the server runs as postgres only when canopy runs as root"))
    func unreachableDataDirectory() throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-private-\(getpid())").path
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let result = try CanopyBinary.run(["cluster", "start", "--data-dir", "\(parent)/.canopy"])
        #expect(!result.succeeded)
        #expect(result.output.contains("cannot enter \(parent) (mode 700)"), "\(result.output)")
        #expect(result.output.contains("chmod o+x \(parent)"), "\(result.output)")
    }

    func python(_ script: String) throws -> Subprocess.Result {
        try Subprocess.start("/usr/bin/env", ["python3", "-c", script]).wait()
    }
}
