@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Crypto
import Foundation
import Testing

/// A Node job with a server-to-server key, signing as CloudKit JS does
/// (the path with its query string; Server/Tests/node/server_key_job.mjs),
/// against a real `canopy serve` with only the base URL changed (issue 66).
@Suite("Web Services: a Node job with a server-to-server key", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct ServerKeyJobTests {
    @Test("node signs as CloudKit JS (path and query string), saves a public record as the key's user and queries it back")
    func nodeJob() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", email: "alice@example.com", on: endpoint)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-key-job-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let privateKey = P256.Signing.PrivateKey()
        let publicFile = folder.appendingPathComponent("public.pem"), privateFile = folder.appendingPathComponent("private.pem")
        try privateKey.publicKey.pemRepresentation.write(to: publicFile, atomically: true, encoding: .utf8)
        try privateKey.pemRepresentation.write(to: privateFile, atomically: true, encoding: .utf8)
        let added = try CanopyBinary.run(["keys", "add", "--public-key", publicFile.path, "--container", WebServicesFixture.container,
                                          "--as", "alice", "--json", "--database-url", endpoint.url])
        #expect(added.succeeded, "\(added.output)")
        let line = added.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let keyID = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["keyID"] as? String, "\(added.output)")

        let port = try EmbeddedCluster.freePort()
        let served = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, ["--container", WebServicesFixture.container])
        defer { kill(served.pid, SIGKILL); _ = try? served.wait() }
        #expect(try await CanopyBinary.waitUntilServing(port: port, attempts: 150), "canopy serve answered /health")
        let job = try await Subprocess.start("/usr/bin/env", [
            "node", "\(Repository.root)/Server/Tests/node/server_key_job.mjs", "http://127.0.0.1:\(port)", WebServicesFixture.container,
            keyID, privateFile.path,
        ]).finished()
        #expect(job.succeeded && job.output.contains("the server-to-server job passed"), "\(job.output)")
        let seen = job.output.split(separator: "\n").first { $0.hasPrefix("{") }.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(seen?["creator"] as? String == alice.userRecordName && seen?["read"] as? [String] == ["from-a-job"], "\(job.output)")
    }
}
