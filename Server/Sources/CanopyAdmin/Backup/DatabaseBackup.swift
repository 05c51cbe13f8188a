import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// `canopy backup`: the database as `pg_dump` writes it (custom format)
/// and the asset bytes its records reference, taken from one snapshot,
/// into a new directory with a manifest. Written under a temporary name and
/// renamed at the end, so a directory with the final name is always whole.
public struct DatabaseBackup: Sendable {
    /// An administrator's endpoint (the dump reads every user's rows).
    public var admin: DatabaseEndpoint
    /// The gateway's asset store, or nil to back up the database alone.
    public var assetDirectory: String?
    public var logger: Logger

    public init(admin: DatabaseEndpoint, assetDirectory: String?, logger: Logger) {
        self.admin = admin
        self.assetDirectory = assetDirectory
        self.logger = logger
    }

    /// Writes the backup to `output`, which must not exist yet.
    @discardableResult
    public func write(to output: String, progress: @Sendable (String) -> Void) async throws -> BackupManifest {
        let output = URL(fileURLWithPath: output).standardizedFileURL.path
        guard !FileManager.default.fileExists(atPath: output) else {
            throw StoreError(.alreadyExists, "\(output) already exists; a backup goes into a new directory")
        }
        let partial = output + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        do {
            try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: false)
        } catch {
            throw StoreError(.invalidConfiguration, "cannot create \(partial): \(error.localizedDescription)")
        }
        do {
            let manifest = try await dump(into: partial, progress: progress)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            try encoder.encode(manifest).write(to: URL(fileURLWithPath: "\(partial)/\(BackupManifest.fileName)"))
            try FileManager.default.moveItem(atPath: partial, toPath: output)
            return manifest
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
    }

    /// The dump and the assets, from one exported snapshot: the counts, the
    /// referenced assets and `pg_dump --snapshot` all see the same database.
    private func dump(into directory: String, progress: @Sendable (String) -> Void) async throws -> BackupManifest {
        let connection = try await DatabaseSetup.connect(admin, logger: logger)
        do {
            let manifest = try await dump(into: directory, connection: connection, progress: progress)
            try? await connection.close()
            return manifest
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private func dump(into directory: String, connection: PostgresConnection, progress: @Sendable (String) -> Void) async throws -> BackupManifest {
        try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
        let snapshot = try await single(String.self, "SELECT pg_export_snapshot()", connection)
        let serverVersion = try await single(String.self, "SHOW server_version", connection)
        guard try await single(Bool.self, "SELECT to_regclass('canopy.schema_migrations') IS NOT NULL", connection) else {
            throw StoreError(.notFound, "\(admin.displayURL) holds no Canopy database (no canopy.schema_migrations)")
        }
        let lastMigration = try await connection.query(
            "SELECT name FROM canopy.schema_migrations WHERE name NOT LIKE 'sql/%' ORDER BY name DESC LIMIT 1", logger: logger
        ).collect().first?.decode(String.self)
        let counts = try await BackupCounts.read(connection, logger: logger)
        progress("snapshot \(snapshot) of \(admin.displayURL) (PostgreSQL \(serverVersion)): \(counts)")

        let dumpPath = "\(directory)/\(BackupManifest.dumpName)"
        let started = ContinuousClock.now
        let pgDump = try ServerPrograms.client("pg_dump")
        let result = try await Subprocess.output(of: pgDump, [
            "--format=custom", "--snapshot=\(snapshot)", "--no-password", "--file=\(dumpPath)", "--dbname=\(admin.database)",
        ], environment: admin.libpqEnvironment)
        guard result.succeeded else {
            throw StoreError(.query, "pg_dump failed (exit \(result.status)): \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        let dump = try FileDigest.sha256(of: dumpPath)
        progress("dumped the database: \(dump.size) bytes in \(Migrator.format(ContinuousClock.now - started)), sha256 \(dump.hex)")

        var assets = (files: 0, bytes: Int64(0))
        if let assetDirectory {
            let digests = try await AssetReferences.digests(connection: connection, logger: logger)
            assets = try BackupAssets.save(digests, from: assetDirectory, to: "\(directory)/\(BackupManifest.assetsName)")
            progress("copied \(assets.files) asset(s), \(assets.bytes) bytes, from \(assetDirectory)")
        } else {
            progress("assets not backed up (--no-assets)")
        }
        try await connection.query("COMMIT", logger: logger)
        return BackupManifest(
            format: BackupManifest.currentFormat, createdAt: Date(), source: admin.displayURL, serverVersion: serverVersion,
            lastMigration: lastMigration, dumpSize: dump.size, dumpSHA256: dump.hex, assetFiles: assets.files,
            assetBytes: assets.bytes, counts: counts
        )
    }

    private func single<T: PostgresDecodable>(_ type: T.Type, _ query: PostgresQuery, _ connection: PostgresConnection) async throws -> T {
        guard let row = try await connection.query(query, logger: logger).collect().first else {
            throw StoreError(.query, "\(query.sql) returned no row")
        }
        return try row.decode(T.self)
    }
}

extension BackupCounts {
    /// The counts in the connection's snapshot (an administrator's: every row).
    static func read(_ connection: PostgresConnection, logger: Logger) async throws -> BackupCounts {
        guard let row = try await connection.query(PostgresQuery(unsafeSQL: query), logger: logger).collect().first else {
            throw StoreError(.query, "counting the database's rows returned nothing")
        }
        let (users, zones, records, shares, participants, uploads) = try row.decode((Int64, Int64, Int64, Int64, Int64, Int64).self)
        return BackupCounts(users: users, zones: zones, records: records, shares: shares, participants: participants, uploads: uploads)
    }
}
