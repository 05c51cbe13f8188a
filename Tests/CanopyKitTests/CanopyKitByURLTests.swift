import CanopyAdmin
import CanopyKit
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing

/// CanopyKit added as an app adds a package: a fresh package outside the
/// tree depends on a `file://` clone of this repository by URL (the root
/// manifest, at this commit), builds CanopyKit, and runs a small program
/// against a live `canopy serve`. The app must fetch CanopyKit's
/// dependencies only, never the server's (Package.swift, DECISIONS 99).
@Suite("CanopyKit added by the repository's URL", .enabled(if: CanopyBinary.exists && ClientTests.enabled, "build the canopy executable first (swift build)"))
struct CanopyKitByURLTests {
    @Test("a fresh package depending on a file:// clone builds CanopyKit alone and talks to a live gateway")
    func addedByURL() async throws {
        let root = TestDatabase.packageRoot
        let head = try Subprocess.start("/usr/bin/env", ["git", "-C", root, "rev-parse", "HEAD"]).wait()
        try #require(head.succeeded, "\(head.output)")
        let revision = head.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("canopykit-by-url-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let clone = try Subprocess.start("/usr/bin/env", ["git", "clone", "-q", "--bare", root, "\(scratch)/canopy.git"]).wait()
        try #require(clone.succeeded, "\(clone.output)")

        let app = "\(scratch)/app"
        try FileManager.default.createDirectory(atPath: "\(app)/Sources/TodoApp", withIntermediateDirectories: true)
        try """
        // swift-tools-version: 6.0
        import PackageDescription
        let package = Package(
            name: "TodoApp",
            platforms: [.macOS(.v13), .iOS(.v16)],
            dependencies: [.package(url: "file://\(scratch)/canopy.git", revision: "\(revision)")],
            targets: [.executableTarget(name: "TodoApp", dependencies: [.product(name: "CanopyKit", package: "canopy")])]
        )
        """.write(toFile: "\(app)/Package.swift", atomically: true, encoding: .utf8)
        try """
        import CanopyKit
        import Foundation

        let arguments = CommandLine.arguments
        let container = Container(baseURL: URL(string: arguments[1])!, token: arguments[2])
        let database = container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "ByURL"))
        let item = Record(recordType: "Item", recordID: Record.ID(recordName: "first", zoneID: zone.zoneID))
        item["title"] = "added by URL"
        _ = try await database.save(item)
        let read = try await database.record(for: item.recordID)
        print("read back: \\(read["title"] as? String ?? "nothing")")
        """.write(toFile: "\(app)/Sources/TodoApp/main.swift", atomically: true, encoding: .utf8)

        // At the lowest CPU priority: this build takes both cores for minutes,
        // and the suites beside it in make test's kit step (the sync engines,
        // the fault run, the generated requests) wait for conditions with
        // deadlines; niced, it takes what they leave (DECISIONS 136).
        let build = try await Subprocess.start("/usr/bin/env", ["nice", "-n", "19", "swift", "build", "--package-path", app]).finished()
        #expect(build.succeeded, "swift build of the app: \(build.output.suffix(4000))")
        // What the app fetched: this repository (its root manifest, CanopyKit's
        // alone) and CanopyKit's own dependencies, exactly.
        let fetched = try FileManager.default.contentsOfDirectory(atPath: "\(app)/.build/checkouts").sorted()
        print("the app fetched: \(fetched.joined(separator: ", "))")
        #expect(Set(fetched).isSubset(of: ["canopy", "swift-nio", "swift-nio-ssl", "swift-atomics", "swift-collections", "swift-system"]),
                "the app fetched more than CanopyKit's dependencies: \(fetched)")
        #expect(fetched.contains("canopy") && fetched.contains("swift-nio") && fetched.contains("swift-nio-ssl"), "\(fetched)")
        for server in ["hummingbird", "postgres-nio", "jwt-kit", "GraphQL", "async-http-client"] {
            #expect(!fetched.contains(server), "the app fetched the server's dependency \(server): \(fetched)")
        }
        // The manifest it read declares CanopyKit and nothing else, with no choice to make.
        let manifest = try String(contentsOfFile: "\(app)/.build/checkouts/canopy/Package.swift", encoding: .utf8)
        #expect(!manifest.contains("Context.") && !manifest.contains("hummingbird"), "the root manifest is CanopyKit's alone")
        guard build.succeeded else { return }

        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let run = try await Subprocess.start("\(app)/.build/debug/TodoApp", [server.baseURL.absoluteString, alice.token]).finished()
        #expect(run.succeeded && run.output.contains("read back: added by URL"), "\(run.output)")
    }
}
