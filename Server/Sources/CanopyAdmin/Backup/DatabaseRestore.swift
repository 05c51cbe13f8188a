import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// `canopy restore`: a backup written by ``DatabaseBackup`` put into a new,
/// empty database: checked first (manifest, the dump's SHA-256), assets
/// copied and checked, the dump restored in one transaction (all or
/// nothing), pending migrations applied, then the change-token key retired,
/// so every change token issued before is CHANGE_TOKEN_EXPIRED rather than
/// a position the restored database may never have reached (docs/BACKUP.md).
public struct DatabaseRestore: Sendable {
    public var admin: DatabaseEndpoint
    /// Where the gateway will keep assets, or nil to leave them out.
    public var assetDirectory: String?
    public var migrator: Migrator
    public var logger: Logger

    public init(admin: DatabaseEndpoint, assetDirectory: String?, migrator: Migrator, logger: Logger) {
        self.admin = admin
        self.assetDirectory = assetDirectory
        self.migrator = migrator
        self.logger = logger
    }

    /// Reads and checks a backup's manifest and dump; touches nothing.
    public static func check(_ input: String) throws -> BackupManifest {
        let path = "\(input)/\(BackupManifest.fileName)"
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError(.notFound, "\(input) is not a Canopy backup: it has no \(BackupManifest.fileName)")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let manifest: BackupManifest
        do {
            manifest = try decoder.decode(BackupManifest.self, from: data)
        } catch {
            throw StoreError(.invalidInput, "\(path) cannot be read as a backup manifest: \(error)")
        }
        guard manifest.format == BackupManifest.currentFormat else {
            throw StoreError(.invalidInput, "\(path) is format \(manifest.format); this canopy reads format \(BackupManifest.currentFormat)")
        }
        let dump = try FileDigest.sha256(of: "\(input)/\(BackupManifest.dumpName)")
        guard dump.size == manifest.dumpSize, dump.hex == manifest.dumpSHA256 else {
            throw StoreError(.invalidInput, """
                \(input)/\(BackupManifest.dumpName) is damaged: \(dump.size) bytes with sha256 \(dump.hex), \
                the manifest says \(manifest.dumpSize) bytes with sha256 \(manifest.dumpSHA256)
                """)
        }
        let assets = try BackupAssets.list(in: "\(input)/\(BackupManifest.assetsName)")
        guard assets.count == manifest.assetFiles else {
            throw StoreError(.invalidInput, "\(input)/\(BackupManifest.assetsName) holds \(assets.count) asset(s); the manifest says \(manifest.assetFiles)")
        }
        return manifest
    }

    /// Restores `input` into the (empty) database; returns its manifest.
    @discardableResult
    public func run(from input: String, progress: @Sendable (String) -> Void) async throws -> BackupManifest {
        let manifest = try Self.check(input)
        progress("backup of \(manifest.source) taken \(manifest.createdAt): \(manifest.counts); dump checked (sha256 \(manifest.dumpSHA256.prefix(12))…)")
        let connection = try await DatabaseSetup.connect(admin, logger: logger)
        do {
            try await restore(input, manifest, connection: connection, progress: progress)
            try? await connection.close()
            return manifest
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private func restore(_ input: String, _ manifest: BackupManifest, connection: PostgresConnection,
                         progress: @Sendable (String) -> Void) async throws {
        let existing = try await connection.query(
            "SELECT count(c.oid) FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid WHERE n.nspname = 'canopy' GROUP BY n.oid",
            logger: logger
        ).collect().first?.decode(Int64.self)
        if let existing {
            throw StoreError(.alreadyExists, """
                \(admin.displayURL) already has a canopy schema (\(existing) tables, indexes and sequences): \
                a restore goes into a new cluster (a new --data-dir) or an empty database, never over data
                """)
        }
        if let assetDirectory, manifest.assetFiles > 0 {
            let copied = try BackupAssets.restore(from: "\(input)/\(BackupManifest.assetsName)", to: assetDirectory, progress: progress)
            progress("assets: \(copied.copied) copied (\(copied.bytes) bytes, each checked against its sha256), \(copied.present) already in \(assetDirectory)")
        }
        try await connection.query(PostgresQuery(unsafeSQL: Self.rolesSQL), logger: logger)

        let started = ContinuousClock.now
        let result = try await Subprocess.output(of: try ServerPrograms.client("pg_restore"), [
            "--exit-on-error", "--single-transaction", "--no-password", "--dbname=\(admin.database)", "\(input)/\(BackupManifest.dumpName)",
        ], environment: admin.libpqEnvironment)
        guard result.succeeded else {
            throw StoreError(.query, """
                pg_restore failed (exit \(result.status)); nothing was restored (one transaction): \
                \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))
                """)
        }
        progress("restored the database in \(Migrator.format(ContinuousClock.now - started))")
        try await migrator.up(connection: connection) { progress("  \($0)") }
        try await connection.query("SELECT canopy.retire_server_secret('change-token')", logger: logger)
        progress("retired the change-token key: change tokens issued before are CHANGE_TOKEN_EXPIRED")
        try await connection.query("ANALYZE", logger: logger)

        let counts = try await BackupCounts.read(connection, logger: logger)
        guard counts == manifest.counts else {
            throw StoreError(.query, "the restored database holds \(counts); the backup held \(manifest.counts)")
        }
        if let assetDirectory {
            let referenced = try await AssetReferences.digests(connection: connection, logger: logger)
            let missing = referenced.filter { !FileManager.default.fileExists(atPath: BackupAssets.path(of: $0, in: assetDirectory)) }
            guard missing.isEmpty else {
                throw StoreError(.notFound, """
                    the database is restored, but \(missing.count) asset(s) its records reference are not in \(assetDirectory) \
                    (first: \(missing.sorted()[0])); was the backup taken with --no-assets?
                    """)
            }
        }
        progress("checked: \(counts)")
    }

    /// The roles the dump's objects belong to and grant to (pg_dump does not
    /// carry roles, which are the cluster's): created when missing, as
    /// migrations/baseline/0011_baseline.sql creates them.
    static let rolesSQL = """
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'canopy_owner') THEN
                CREATE ROLE canopy_owner NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
            END IF;
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'canopy_gateway') THEN
                CREATE ROLE canopy_gateway LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
            END IF;
        END
        $$
        """
}
