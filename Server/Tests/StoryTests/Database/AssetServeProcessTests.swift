@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Uploads to `canopy serve` as a separate process, from Python's standard
/// library: a 48 MB body costs the server far less memory than its size,
/// and a server killed in the middle of an upload leaves no file under a
/// digest and no upload row.
@Suite("canopy serve: uploads", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct AssetServeProcessTests {
    static let size = 48 * 1024 * 1024

    /// The server's peak resident memory so far (VmHWM), in bytes.
    func peakMemory(_ pid: pid_t) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// Python that uploads `size` bytes of a repeating pattern in 1 MiB
    /// pieces (pausing `pause` seconds after `pauseAfter` MiB) and prints
    /// the answer and its own SHA-256 of what it sent.
    func uploader(port: Int, token: String, size: Int, pauseAfter: Int = -1, pause: Int = 0) -> String {
        """
        import hashlib, http.client, sys, time
        piece = bytes((i * 7 + (i >> 9)) % 256 for i in range(1 << 20))
        digest = hashlib.sha256()
        def body():
            sent = 0
            for index in range(\(size) >> 20):
                if index == \(pauseAfter):
                    sys.stdout.flush()
                    time.sleep(\(pause))
                digest.update(piece)
                yield piece
        connection = http.client.HTTPConnection('127.0.0.1', \(port), timeout=120)
        connection.request('POST', '/assets', body=body(), headers={
            'Authorization': 'Bearer \(token)', 'Content-Type': 'application/pdf', 'Content-Length': str(\(size))})
        answer = connection.getresponse()
        print(answer.status, answer.read().decode(), digest.hexdigest())
        """
    }

    func startServer(_ endpoint: DatabaseEndpoint, assets: String, port: Int) async throws -> Subprocess.Started {
        let server = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, ["--asset-dir", assets])
        if try await CanopyBinary.waitUntilServing(port: port) { return server }
        kill(server.pid, SIGKILL)
        Issue.record("canopy serve did not answer /health")
        throw CancellationError()
    }

    func files(_ directory: String, _ folder: String) -> [String] {
        regularFiles(under: URL(fileURLWithPath: directory).appendingPathComponent(folder)).map { URL(fileURLWithPath: $0).lastPathComponent }
    }

    @Test("a 48 MB upload keeps the server's memory far below its size; a kill mid-upload leaves no digest file and no row")
    func largeUploadAndKill() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("uploader", on: endpoint)
        let assets = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-serve-assets-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: assets) }
        let port = 21000 + Int(getpid() % 20000)
        let server = try await startServer(endpoint, assets: assets, port: port)

        // Warm up (first request, pools, the first small upload), then measure the peak around the large one.
        _ = try await Subprocess.start("/usr/bin/env", ["python3", "-c", uploader(port: port, token: token.string, size: 1 << 20)]).exit()
        let before = try peakMemory(server.pid)
        let large = try await Subprocess.start("/usr/bin/env", ["python3", "-c", uploader(port: port, token: token.string, size: Self.size)]).exit()
        let after = try peakMemory(server.pid)
        let words = large.output.split(separator: " ")
        #expect(words.first == "200", "\(large.output)")
        let sentDigest = String(words.last ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(large.output.contains("\"sha256\":\"\(sentDigest)\""), "the server's SHA-256 is the client's: \(large.output)")
        #expect(large.output.contains("\"size\":\(Self.size)"), "\(large.output)")
        #expect(after - before < 16 * 1024 * 1024, "peak RSS grew \(after - before) bytes for a \(Self.size)-byte upload")
        let stored = Set(files(assets, "blobs"))
        #expect(stored.contains(sentDigest))

        // A second large upload; the server is killed once part of it is on disk.
        let slow = try Subprocess.start("/usr/bin/env", ["python3", "-c",
            uploader(port: port, token: token.string, size: Self.size, pauseAfter: 8, pause: 30)])
        var partial = false
        for _ in 0..<100 where !partial {
            try await Task.sleep(for: .milliseconds(100))
            partial = !files(assets, "incoming").isEmpty
        }
        #expect(partial, "the upload was under way")
        kill(server.pid, SIGKILL)
        _ = try await server.exit()
        kill(slow.pid, SIGKILL)
        _ = try? await slow.exit()
        #expect(Set(files(assets, "blobs")) == stored, "no new file under a digest")
        let rows = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("SELECT count(*)::text FROM canopy.uploads")
        }
        #expect(rows == ["2"], "the warm-up and the large upload, not the killed one")
    }
}
