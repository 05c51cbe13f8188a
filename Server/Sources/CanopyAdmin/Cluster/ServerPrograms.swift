import CanopyRequestStore
import Foundation

/// The PostgreSQL server programs (initdb, pg_ctl, postgres, psql) that the
/// embedded cluster runs, found as docs/API.md §8 says: `$CANOPY_PG_BINDIR`,
/// `pg_config --bindir`, PATH, then `/usr/lib/postgresql/*/bin`.
public struct ServerPrograms: Sendable {
    public let binDirectory: String

    public var initdb: String { "\(binDirectory)/initdb" }
    public var pgCtl: String { "\(binDirectory)/pg_ctl" }
    public var pgBasebackup: String { "\(binDirectory)/pg_basebackup" }
    public var psql: String {
        let local = "\(binDirectory)/psql"
        return FileManager.default.isExecutableFile(atPath: local) ? local : (Subprocess.which("psql") ?? local)
    }

    /// A client program (pg_dump, pg_restore): the server's own when they
    /// are installed (a pg_dump older than the server refuses to dump it),
    /// else the first on PATH.
    public static func client(_ name: String) throws -> String {
        if let programs = try? locate(), FileManager.default.isExecutableFile(atPath: "\(programs.binDirectory)/\(name)") {
            return "\(programs.binDirectory)/\(name)"
        }
        if let found = Subprocess.which(name) { return found }
        throw StoreError(.postgresNotInstalled, "\(name) was not found; install PostgreSQL's client programs (apt-get install -y postgresql-client)")
    }

    public static func locate() throws -> ServerPrograms {
        for directory in candidateDirectories() where isServerDirectory(directory) {
            return ServerPrograms(binDirectory: directory)
        }
        throw StoreError(
            .postgresNotInstalled,
            """
            PostgreSQL's server programs (initdb, pg_ctl) were not found in $CANOPY_PG_BINDIR, `pg_config --bindir`, \
            PATH or /usr/lib/postgresql/*/bin. Install them (Debian/Ubuntu, as root: apt-get install -y postgresql; \
            macOS: brew install postgresql@15), or point Canopy at a running server with --database-url.
            """
        )
    }

    static func candidateDirectories() -> [String] {
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["CANOPY_PG_BINDIR"], !explicit.isEmpty {
            candidates.append(explicit)
        }
        if let pgConfig = Subprocess.which("pg_config"),
           let result = try? Subprocess.run(pgConfig, ["--bindir"]), result.succeeded {
            candidates.append(result.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        if let initdb = Subprocess.which("initdb") {
            let resolved = URL(fileURLWithPath: initdb).resolvingSymlinksInPath()
            candidates.append(resolved.deletingLastPathComponent().path)
        }
        let root = "/usr/lib/postgresql"
        if let versions = try? FileManager.default.contentsOfDirectory(atPath: root) {
            let sorted = versions.compactMap { Int($0) }.sorted(by: >)
            candidates += sorted.map { "\(root)/\($0)/bin" }
        }
        return candidates
    }

    static func isServerDirectory(_ directory: String) -> Bool {
        ["initdb", "pg_ctl", "postgres"].allSatisfy {
            FileManager.default.isExecutableFile(atPath: "\(directory)/\($0)")
        }
    }
}
