import ArgumentParser
import CanopyAdmin
import CanopyAssets
import CanopyRequestStore
import Foundation

/// `canopy assets collect`: removes bytes no live upload and no record
/// references, after a grace period.
struct AssetsCollect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collect",
        abstract: "Remove asset bytes nothing references any more, and unfinished uploads, older than the grace period; print what was freed.",
        discussion: """
            Run it from cron or a timer (hourly is plenty). Bytes are kept while a live upload or a \
            record references them, and for --grace-hours after they were last written or uploaded \
            again whatever references them, so an upload in flight is never lost.
            """
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    @OptionGroup var assets: AssetDirectoryOptions

    @Option(name: .customLong("grace-hours"), help: "Keep anything written within this many hours.")
    var graceHours: Double = 24

    @Flag(name: .customLong("dry-run"), help: "Say what would be removed; remove nothing.")
    var dryRun = false

    func validate() throws {
        guard graceHours >= 0, graceHours.isFinite else {
            throw ValidationError("--grace-hours must be 0 or more, not \(graceHours)")
        }
    }

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.assets")
        let directory = assets.directory(database)
        let migrator = migrations.migrator(logger: logger)
        let report: CollectionReport
        do {
            let store = try await FileAssetStore(directory: directory)
            // References first, then the store: bytes uploaded in between are
            // younger than the grace period and stay.
            let referenced = try await withAdminConnection(database, logger: logger) { connection, _ in
                try await migrator.up(connection: connection) { _ in }
                return try await AssetReferences.digests(connection: connection, logger: logger)
            }
            report = try await AssetCollector.collect(
                store: store, referenced: Set(referenced.compactMap(AssetDigest.init(hex:))),
                graceCutoff: Date().addingTimeInterval(-graceHours * 3600), dryRun: dryRun
            )
        } catch {
            throw fail(error)
        }
        let verb = dryRun ? "would remove" : "removed"
        for asset in report.removed {
            print("\(verb) \(asset.digest) (\(asset.size) bytes)")
        }
        for name in report.removedIncomplete {
            print("\(verb) unfinished upload incoming/\(name)")
        }
        print("\(directory): \(verb) \(report.removed.count) unreferenced (\(report.freedBytes) bytes) and "
              + "\(report.removedIncomplete.count) unfinished; kept \(report.keptReferenced) referenced and \(report.keptRecent) within \(graceHours) h")
    }
}
