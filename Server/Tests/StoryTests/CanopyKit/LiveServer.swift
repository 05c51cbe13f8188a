@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyKit
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing

/// A real `canopy serve` (the built executable) on a database of its own,
/// with users made by `canopy users add`: what CanopyKit is tested against.
final class LiveServer: @unchecked Sendable {
    let endpoint: DatabaseEndpoint
    let port: Int
    private let lock = NSLock()
    private var started: Subprocess.Started?

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private init(endpoint: DatabaseEndpoint, port: Int) {
        self.endpoint = endpoint
        self.port = port
    }

    static func start(_ extraArguments: [String] = []) async throws -> LiveServer {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let server = LiveServer(endpoint: endpoint, port: try EmbeddedCluster.freePort())
        try await server.startProcess(extraArguments)
        return server
    }

    /// Starts `canopy serve` (again, after `kill`), on the same port.
    func startProcess(_ extraArguments: [String] = []) async throws {
        let process = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, [
            "--public-url", baseURL.absoluteString, "--rate-limit", "0",
        ] + extraArguments)
        lock.withLock { started = process }
        guard try await CanopyBinary.waitUntilServing(port: port, attempts: 200) else {
            kill(process.pid, SIGKILL)
            throw CanopyError(.networkFailure, "canopy serve did not answer /health: \(try process.wait().output)")
        }
    }

    /// Stops the gateway: SIGTERM (graceful) or SIGKILL (a crash).
    func stop(signal: Int32 = SIGTERM) {
        guard let process = lock.withLock({ started }) else { return }
        kill(process.pid, signal)
        _ = try? process.wait()
        lock.withLock { started = nil }
    }

    deinit { stop() }

    /// A new user and a container signed in as them.
    func user(_ name: String, email: String? = nil) throws -> (container: Container, userRecordName: String, token: String) {
        var arguments = ["users", "add", name, "--json", "--database-url", endpoint.url]
        if let email { arguments += ["--email", email] }
        let result = try CanopyBinary.run(arguments)
        guard result.succeeded, let line = result.output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let token = json["token"] as? String, let recordName = json["userRecordName"] as? String else {
            throw CanopyError(.internalError, "canopy users add failed: \(result.output)")
        }
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("canopykit-\(UUID().uuidString)")
        return (Container(baseURL: baseURL, session: .shared, assetCacheDirectory: cache) { _ in token }, recordName, token)
    }

    /// Runs SQL as the administrator (to retire the change-token key, as a restore does).
    func administer(_ sql: String) throws {
        let result = try Subprocess.start("/usr/bin/env", ["psql", endpoint.url, "-v", "ON_ERROR_STOP=1", "-Atc", sql]).wait()
        guard result.succeeded else { throw CanopyError(.internalError, "psql: \(result.output)") }
    }
}
