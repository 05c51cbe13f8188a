@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// The two kinds of SQL file: versioned (`migrations/`, with its baseline
/// and archive) and repeatable (`sql/`), through `canopy migrate` as people
/// run it, compared with `pg_dump --schema-only` (policies, function bodies,
/// triggers, grants and comments included).
@Suite("versioned and repeatable SQL", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct RepeatableSQLTests {
    /// A scratch copy of `migrations/` and `sql/` side by side, to edit.
    struct Scratch {
        let root: String
        var migrations: String { "\(root)/migrations" }
        var sql: String { "\(root)/sql" }

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-sql-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: TestDatabase.migrationsDirectory, toPath: migrations)
            try FileManager.default.copyItem(atPath: TestDatabase.codeDirectory, toPath: sql)
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }

        func arguments(_ endpoint: DatabaseEndpoint) -> [String] {
            ["--database-url", endpoint.url, "--migrations-dir", migrations, "--sql-dir", sql]
        }

        /// Today's layout before this one: the archived files as plain
        /// versioned files (up to `version`), and no repeatable files.
        static func archiveOnly(through version: Int) throws -> Scratch {
            let scratch = try Scratch()
            let manager = FileManager.default
            for name in try manager.contentsOfDirectory(atPath: scratch.migrations) where name.hasSuffix(".sql") {
                try manager.removeItem(atPath: "\(scratch.migrations)/\(name)")
            }
            for name in try manager.contentsOfDirectory(atPath: "\(scratch.migrations)/archive") where name.hasSuffix(".sql") {
                if let number = Int(name.prefix(4)), number <= version {
                    try manager.copyItem(atPath: "\(scratch.migrations)/archive/\(name)", toPath: "\(scratch.migrations)/\(name)")
                }
            }
            try manager.removeItem(atPath: "\(scratch.migrations)/archive")
            try manager.removeItem(atPath: "\(scratch.migrations)/baseline")
            try manager.removeItem(atPath: scratch.sql)
            try manager.createDirectory(atPath: scratch.sql, withIntermediateDirectories: true)
            try "# nothing yet\n".write(toFile: "\(scratch.sql)/manifest.txt", atomically: true, encoding: .utf8)
            return scratch
        }
    }

    func migrate(_ command: String, _ arguments: [String]) throws -> Subprocess.Result {
        try CanopyBinary.run(["migrate", command] + arguments)
    }

    /// `pg_dump --schema-only` of a database, as its administrator.
    func schemaDump(_ endpoint: DatabaseEndpoint) throws -> String {
        let pgDump = "\(try ServerPrograms.locate().binDirectory)/pg_dump"
        var environment = ProcessInfo.processInfo.environment
        environment.merge(endpoint.libpqEnvironment) { _, new in new }
        let result = try Subprocess.start(pgDump, ["--schema-only"], environment: environment).wait()
        try #require(result.succeeded, "pg_dump failed: \(result.output)")
        // Newer pg_dumps fence their output with a random \restrict key.
        return result.output.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("\\restrict ") && !$0.hasPrefix("\\unrestrict ") }
            .joined(separator: "\n")
    }

    /// The lines that differ between two dumps, for a readable failure.
    func difference(_ a: String, _ b: String) -> String {
        let left = a.split(separator: "\n", omittingEmptySubsequences: false)
        let right = b.split(separator: "\n", omittingEmptySubsequences: false)
        let onlyLeft = left.filter { !right.contains($0) }.prefix(20)
        let onlyRight = right.filter { !left.contains($0) }.prefix(20)
        return "only in the first:\n" + onlyLeft.joined(separator: "\n") + "\nonly in the second:\n" + onlyRight.joined(separator: "\n")
    }

    func recorded(_ endpoint: DatabaseEndpoint, _ query: PostgresQuery) async throws -> [String?] {
        try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts(query)
        }
    }

    @Test("a database built by the archived files (whole, or up to 0007) and then upgraded equals one built from empty", arguments: [11, 7])
    func upgradeEqualsNewInstall(archivedThrough version: Int) async throws {
        let fresh = try await TestDatabase.shared.emptyDatabase()
        let current = try Scratch()
        defer { current.remove() }
        let up = try migrate("up", current.arguments(fresh))
        try #require(up.succeeded, "\(up.output)")
        #expect(up.output.contains("applied 0011_baseline.sql"), "\(up.output)")

        let old = try await TestDatabase.shared.emptyDatabase()
        let archived = try Scratch.archiveOnly(through: version)
        defer { archived.remove() }
        let before = try migrate("up", archived.arguments(old))
        try #require(before.succeeded, "\(before.output)")
        let upgrade = try migrate("up", current.arguments(old))
        try #require(upgrade.succeeded, "\(upgrade.output)")
        #expect(!upgrade.output.contains("0011_baseline.sql"), "an archive-built database never applies the baseline: \(upgrade.output)")
        if version < 11 {
            #expect(upgrade.output.contains("applied 0011_visible_users_speed.sql"), "the rest of the archive is applied: \(upgrade.output)")
        }

        let freshDump = try schemaDump(fresh)
        let upgradedDump = try schemaDump(old)
        #expect(freshDump.contains("CREATE POLICY records_select"), "the dump holds policies")
        let same = freshDump == upgradedDump
        #expect(same, "\(difference(freshDump, upgradedDump))")

        let status = try migrate("status", current.arguments(old))
        #expect(status.succeeded, "\(status.output)")
        #expect(status.output.contains("skipped  0011_baseline.sql"), "\(status.output)")
        #expect(status.output.contains("applied  0002_tables.sql"), "\(status.output)")
        #expect(status.output.contains("applied  sql/"), "\(status.output)")
    }

    @Test("editing a repeatable file and running up replaces that file's objects and nothing else")
    func editedRepeatableFile() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let arguments = scratch.arguments(endpoint)
        try #require(try migrate("up", arguments).succeeded)
        let objects: PostgresQuery = """
            SELECT string_agg(kind || ' ' || name || ' ' || oid, ', ' ORDER BY kind, name) FROM (
                SELECT 'policy' AS kind, polname::text AS name, oid FROM pg_policy
                UNION ALL SELECT 'trigger', tgname::text, oid FROM pg_trigger WHERE NOT tgisinternal
            ) objects
            """
        let before = try await recorded(endpoint, objects)

        let path = "\(scratch.sql)/functions/identity.sql"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let edited = text + "\nCOMMENT ON FUNCTION canopy.current_user_id() IS 'edited by a test';\n"
        try edited.write(toFile: path, atomically: true, encoding: .utf8)

        let status = try migrate("status", arguments)
        #expect(status.output.contains("changed  sql/functions/identity.sql"), "\(status.output)")
        let verify = try migrate("verify", arguments)
        #expect(verify.succeeded && verify.output.contains("sql/functions/identity.sql"), "\(verify.output)")

        let up = try migrate("up", arguments)
        #expect(up.succeeded, "\(up.output)")
        let appliedLines = up.output.split(separator: "\n").filter { $0.hasPrefix("applied ") }
        #expect(appliedLines.count == 1 && appliedLines[0].hasPrefix("applied sql/functions/identity.sql "), "\(up.output)")
        let comment = try await recorded(endpoint, "SELECT obj_description('canopy.current_user_id()'::regprocedure, 'pg_proc')")
        #expect(comment == ["edited by a test"])
        #expect(try await recorded(endpoint, objects) == before, "no policy or trigger was recreated")
        #expect(try migrate("up", arguments).output.contains("up to date"))
    }

    @Test("a broken repeatable file names its file and line and leaves the database's code as it was")
    func brokenRepeatableFile() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let arguments = scratch.arguments(endpoint)
        try #require(try migrate("up", arguments).succeeded)
        let before = try schemaDump(endpoint)
        let recordedChecksums: PostgresQuery = "SELECT string_agg(path || '=' || checksum, ',' ORDER BY path) FROM canopy.schema_repeatables"
        let checksums = try await recorded(endpoint, recordedChecksums)

        // A good change in one file, and a later file that fails part-way.
        let identity = "\(scratch.sql)/functions/identity.sql"
        try (try String(contentsOfFile: identity, encoding: .utf8) + "\nCOMMENT ON FUNCTION canopy.current_user_id() IS 'must not stay';\n")
            .write(toFile: identity, atomically: true, encoding: .utf8)
        let policies = "\(scratch.sql)/policies/records.sql"
        let text = try String(contentsOfFile: policies, encoding: .utf8)
        let line = text.split(separator: "\n", omittingEmptySubsequences: false).count + 2
        try (text + "\n-- broken on purpose\nCREATE POLICY broken ON canopy.records FOR SELECT TO canopy_gateway USING (no_such_column);\n")
            .write(toFile: policies, atomically: true, encoding: .utf8)

        let up = try migrate("up", arguments)
        #expect(!up.succeeded)
        #expect(up.output.contains("sql/policies/records.sql failed at line \(line)"), "\(up.output)")
        #expect(up.output.contains("no_such_column"), "\(up.output)")
        let after = try schemaDump(endpoint)
        let same = after == before
        #expect(same, "nothing of the pass stays, not even the good file's change: \(difference(before, after))")
        #expect(try await recorded(endpoint, recordedChecksums) == checksums)
    }

    @Test("the manifest must list every file, and only files that exist")
    func manifestChecked() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let scratch = try Scratch()
        defer { scratch.remove() }
        try "SELECT 1;\n".write(toFile: "\(scratch.sql)/functions/stray.sql", atomically: true, encoding: .utf8)
        let unlisted = try migrate("up", scratch.arguments(endpoint))
        #expect(!unlisted.succeeded)
        #expect(unlisted.output.contains("functions/stray.sql is not listed in"), "\(unlisted.output)")
        #expect(try await recorded(endpoint, "SELECT coalesce(to_regclass('canopy.schema_migrations')::text, 'absent')") == ["absent"], "nothing applied")
    }
}
