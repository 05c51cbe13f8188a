@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing

/// CanopyJS (clients/js) under Node 20's own test runner, against live
/// `canopy serve` processes the JavaScript harness starts on a migrated
/// database made here: every operation, the sync engine (and its
/// randomized fault run, which starts clusters of its own), the README's
/// example, and the declarations against the modules. Node's report is the evidence; this
/// suite fails when any Node test does.
@Suite("CanopyJS under Node", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct CanopyJSTests {
    @Test("node --test clients/js/test passes against a live gateway")
    func nodeSuite() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let directory = "\(Repository.root)/clients/js/test"
        // CANOPY_JS_TEST_FILTER=first-sync runs only the files whose name holds it (by hand).
        let only = ProcessInfo.processInfo.environment["CANOPY_JS_TEST_FILTER"]
        // The tooling files (tsc, npm) run in CanopyJSToolingTests, in the stories tier too (docs/TESTING.md).
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasSuffix(".test.js") && (only.map($0.contains) ?? !CanopyJSToolingTests.files.contains($0)) }.sorted()
        #expect(files.count >= (only == nil ? 3 : 1), "\(files)")
        try await Self.runNode(files.map { "\(directory)/\($0)" }, database: endpoint)
    }

    /// Node's test runner over `paths`, against `database`; fails when any Node test does.
    static func runNode(_ paths: [String], database endpoint: DatabaseEndpoint) async throws {
        let result = try await Subprocess.start("/usr/bin/env", [
            "node", "--experimental-websocket", "--test", "--test-concurrency=1", "--test-timeout=600000", "--test-reporter=spec",
        ] + paths, environment: [
            "CANOPY_BIN": CanopyBinary.path,
            "CANOPY_TEST_DATABASE_URL": endpoint.url,
            "CANOPY_MIGRATIONS_DIR": TestDatabase.migrationsDirectory,
        ]).finished()
        print(result.output)
        #expect(result.succeeded, "node --test failed:\n\(result.output.suffix(6000))")
        #expect(result.output.contains("ℹ fail 0") && !result.output.contains("ℹ pass 0"), "\(result.output.suffix(2000))")
    }
}

/// CanopyJS's tooling under Node (`typescript.test.js`: `tsc --strict` over
/// typed records, the README's and docs' examples and the example app;
/// `package.test.js`: `npm pack` installed offline), against a live
/// gateway as CanopyJSTests. Apart from it because `tsc` and `npm` are
/// CPU-heavy: `make test` runs these with the browser suites, not beside the
/// CanopyKit suites' timing bounds.
@Suite("CanopyJS tooling: TypeScript and npm", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct CanopyJSToolingTests {
    static let files = ["package.test.js", "typescript.test.js"]

    @Test("node --test runs typescript.test.js and package.test.js against a live gateway")
    func toolingSuite() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let directory = "\(Repository.root)/clients/js/test"
        try await CanopyJSTests.runNode(Self.files.map { "\(directory)/\($0)" }, database: endpoint)
    }
}
