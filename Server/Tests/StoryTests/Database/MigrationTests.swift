@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// `canopy migrate` as people run it: separate processes against a real
/// server, with the repository's migrations or a scratch copy of them.
@Suite("canopy migrate", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct MigrationTests {
    /// A copy of migrations/ to edit freely, with sql/ beside it; returns
    /// the copy of migrations/.
    func scratchMigrations() throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-migrations-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestDatabase.migrationsDirectory, toPath: "\(root)/migrations")
        try FileManager.default.copyItem(atPath: TestDatabase.codeDirectory, toPath: "\(root)/sql")
        return "\(root)/migrations"
    }

    func applied(_ endpoint: DatabaseEndpoint) async throws -> [String?] {
        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("SELECT name FROM canopy.schema_migrations ORDER BY name")
        }
    }

    /// What a new database records: the baseline, then the versioned files.
    var expectedFiles: [String] {
        func sqlFiles(_ directory: String) -> [String] {
            (try? FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }.sorted()) ?? []
        }
        return sqlFiles("\(TestDatabase.migrationsDirectory)/baseline") + sqlFiles(TestDatabase.migrationsDirectory)
    }

    /// The repeatable files, as `up` names them.
    var expectedCode: [String] {
        ((try? RepeatableFile.load(directory: TestDatabase.codeDirectory)) ?? []).map { "sql/\($0.path)" }
    }

    @Test("eight processes running `up` at once apply each versioned and repeatable file exactly once")
    func concurrentUp() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let started = try (0..<8).map { _ in
            try Subprocess.start(CanopyBinary.path, ["migrate", "up", "--database-url", endpoint.url, "--migrations-dir", TestDatabase.migrationsDirectory])
        }
        var results: [Subprocess.Result] = []
        for process in started { results.append(try await process.exit()) }
        for result in results {
            #expect(result.succeeded, "\(result.output)")
        }
        let appliedLines = results.flatMap { $0.output.split(separator: "\n") }.filter { $0.hasPrefix("applied ") }
        #expect(appliedLines.count == expectedFiles.count + expectedCode.count, "each file applied by exactly one process: \(appliedLines)")
        #expect(expectedCode.count > 5)
        for file in expectedFiles + expectedCode {
            #expect(appliedLines.filter { $0.hasPrefix("applied \(file) ") }.count == 1, "\(file)")
        }
        #expect(try await applied(endpoint) == expectedFiles)

        let again = try CanopyBinary.run(["migrate", "up", "--database-url", endpoint.url, "--migrations-dir", TestDatabase.migrationsDirectory])
        #expect(again.succeeded)
        #expect(again.output.contains("up to date"), "re-running up is a no-op: \(again.output)")
        let status = try CanopyBinary.run(["migrate", "status", "--database-url", endpoint.url, "--migrations-dir", TestDatabase.migrationsDirectory])
        #expect(status.succeeded)
        #expect(status.output.split(separator: "\n").filter { $0.hasPrefix("applied ") }.count == expectedFiles.count + expectedCode.count, "\(status.output)")
    }

    @Test("an applied file that was edited stops verify and up, naming the file")
    func editedFile() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let directory = try scratchMigrations()
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: directory).deletingLastPathComponent().path) }
        let arguments = ["--database-url", endpoint.url, "--migrations-dir", directory]
        #expect(try CanopyBinary.run(["migrate", "up"] + arguments).succeeded)
        #expect(try CanopyBinary.run(["migrate", "verify"] + arguments).succeeded)

        let edited = "\(directory)/baseline/0011_baseline.sql"
        let text = try String(contentsOfFile: edited, encoding: .utf8)
        try (text + "\n-- an innocent-looking comment\n").write(toFile: edited, atomically: true, encoding: .utf8)
        // A new pending file must not be applied past the edited one.
        try "SET LOCAL ROLE canopy_owner;\nCREATE TABLE canopy.after_edit (x int);\n".write(toFile: "\(directory)/0099_after_edit.sql", atomically: true, encoding: .utf8)

        let verify = try CanopyBinary.run(["migrate", "verify"] + arguments)
        #expect(!verify.succeeded)
        #expect(verify.output.contains("0011_baseline.sql") && verify.output.contains("edited"), "\(verify.output)")
        let up = try CanopyBinary.run(["migrate", "up"] + arguments)
        #expect(!up.succeeded)
        #expect(up.output.contains("0011_baseline.sql"), "\(up.output)")
        let status = try CanopyBinary.run(["migrate", "status"] + arguments)
        #expect(status.output.contains("edited   0011_baseline.sql"), "\(status.output)")
        #expect(status.output.contains("pending  0099_after_edit.sql"), "\(status.output)")
        #expect(!(try await applied(endpoint)).contains("0099_after_edit.sql"))
    }

    @Test("a failing file names itself and its line, and leaves nothing half-applied")
    func failingFile() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let directory = try scratchMigrations()
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: directory).deletingLastPathComponent().path) }
        try """
            -- A migration whose second statement fails.
            SET LOCAL ROLE canopy_owner;
            CREATE TABLE canopy.half_applied (x int);

            INSERT INTO canopy.half_applied
            SELECT no_such_column FROM canopy.half_applied;
            """.write(toFile: "\(directory)/0098_broken.sql", atomically: true, encoding: .utf8)
        let arguments = ["--database-url", endpoint.url, "--migrations-dir", directory]
        let up = try CanopyBinary.run(["migrate", "up"] + arguments)
        #expect(!up.succeeded)
        #expect(up.output.contains("0098_broken.sql failed at line 6"), "\(up.output)")
        #expect(up.output.contains("no_such_column"), "\(up.output)")
        #expect(try await applied(endpoint) == expectedFiles, "the good files stay applied, the broken one is not recorded")
        let exists = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("SELECT coalesce(to_regclass('canopy.half_applied')::text, 'absent')")
        }
        #expect(exists == ["absent"], "nothing of the failing file remains")
    }

    @Test("migrate new creates the next numbered file")
    func newFile() throws {
        let directory = try scratchMigrations()
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: directory).deletingLastPathComponent().path) }
        let result = try CanopyBinary.run(["migrate", "new", "add_index", "--migrations-dir", directory])
        #expect(result.succeeded, "\(result.output)")
        let next = String(format: "%04d_add_index.sql", (expectedFiles.compactMap { Int($0.prefix(4)) }.max() ?? 0) + 1)
        #expect(result.output.contains(next), "\(result.output)")
        #expect(FileManager.default.fileExists(atPath: "\(directory)/\(next)"))
        let bad = try CanopyBinary.run(["migrate", "new", "Bad Name", "--migrations-dir", directory])
        #expect(!bad.succeeded)
    }
}

/// The statement splitter behind located migration errors.
@Suite("SQLScript")
struct SQLScriptTests {
    @Test("splits on semicolons outside quotes, comments and dollar-quoted bodies, with start lines")
    func splits() {
        let script = SQLScript("""
            -- header; with a semicolon
            CREATE TABLE a (x text DEFAULT 'a;b');
            /* block; comment */ CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$
            BEGIN
              RETURN 1; -- inner
            END
            $body$;

            SELECT "odd;name", E'it\\'s;' FROM a;
            SELECT $$x;y$$
            """)
        #expect(script.statements.map(\.line) == [2, 3, 9, 10])
        #expect(script.statements[0].text == "CREATE TABLE a (x text DEFAULT 'a;b')")
        #expect(script.statements[1].text.hasSuffix("$body$"))
        #expect(script.statements[3].text == "SELECT $$x;y$$")
    }
}
