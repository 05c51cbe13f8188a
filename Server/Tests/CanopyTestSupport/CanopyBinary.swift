import CanopyAdmin
import CanopyRequestStore
import Foundation

/// The built `canopy` executable (`swift build` puts it in .build/debug;
/// `make test` builds it before testing), run as a separate process.
public enum CanopyBinary {
    public static var path: String {
        ProcessInfo.processInfo.environment["CANOPY_BIN"] ?? "\(Repository.root)/.build/debug/canopy"
    }

    public static var exists: Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Runs `canopy ARGS` and returns its exit status and combined output.
    public static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Subprocess.Result {
        try Subprocess.start(path, arguments, environment: environment).wait()
    }

    /// `run`, waiting on a thread of its own rather than one of Swift's
    /// cooperative pool (two on a 2-core machine): an in-process gateway
    /// of another test keeps answering meanwhile.
    public static func runOffPool(_ arguments: [String], environment: [String: String] = [:]) async throws -> Subprocess.Result {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Subprocess.Result, any Error>) in
            Thread { continuation.resume(with: Result { try run(arguments, environment: environment) }) }.start()
        }
    }

    /// Starts `canopy serve` on `databaseURL` and `port`, migrating from the
    /// package's migrations, with `extra` flags; the caller stops it.
    /// Webhooks and Web Push may go to loopback, where test receivers
    /// listen (`--outbound-allow`; `canopy serve` refuses it by default).
    public static func serve(databaseURL: String, port: Int, _ extra: [String] = [],
                             environment: [String: String] = [:]) throws -> Subprocess.Started {
        try Subprocess.start(path, [
            "serve", "--database-url", databaseURL, "--migrations-dir", TestDatabase.migrationsDirectory, "--port", String(port),
            "--outbound-allow", "127.0.0.0/8,::1,localhost",
        ] + extra, environment: environment)
    }
}

extension DatabaseEndpoint {
    /// A URL for `--database-url` that reaches this endpoint (test roles have no password).
    public var url: String { displayURL }
}

extension CanopyBinary {
    /// Waits until a `canopy serve` on `port` answers `GET /health` with 200,
    /// asked by a second, independent client (Python's urllib), every 100 ms
    /// up to `attempts` times; true when it did.
    public static func waitUntilServing(port: Int, attempts: Int = 100) async throws -> Bool {
        try await waitUntilAnswering("http://127.0.0.1:\(port)/health", attempts: attempts)
    }

    /// Waits until `url` (on loopback) answers 200, asked by Python's urllib
    /// every 100 ms up to `attempts` times; true when it did.
    public static func waitUntilAnswering(_ url: String, attempts: Int = 100) async throws -> Bool {
        for _ in 0..<attempts {
            try await Task.sleep(for: .milliseconds(100))
            let answer = try? Subprocess.start("/usr/bin/env", ["python3", "-c",
                "import urllib.request; print(urllib.request.urlopen('\(url)').status)"]).wait()
            if answer?.output.contains("200") == true { return true }
        }
        return false
    }
}
