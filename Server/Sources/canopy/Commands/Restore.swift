import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy restore DIR`: a backup put into a new cluster or an empty
/// database, checked before and after (docs/BACKUP.md).
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a backup written by `canopy backup` into a new cluster (--data-dir) or an empty database (--database-url).",
        discussion: """
            Checks the manifest and the dump's SHA-256 first, then copies the assets (each checked against \
            its name) into --asset-dir, restores the dump in one transaction (on failure nothing is left \
            half restored), applies newer migrations, and compares row counts with the manifest. The \
            change-token key is retired: every change token issued before the restore is answered \
            CHANGE_TOKEN_EXPIRED, and clients fetch their zones again from null. Users, their API tokens, \
            shares and permissions come back as they were. A database that already has a canopy schema \
            is refused. With --check, only the backup is checked; nothing is touched.
            """
    )

    @Argument(help: ArgumentHelp("The backup directory.", valueName: "dir"))
    var input: String

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions
    @OptionGroup var assets: AssetDirectoryOptions

    @Flag(name: .customLong("no-assets"), help: "Restore the database alone; leave the backup's assets where they are.")
    var noAssets = false

    @Flag(help: "Check the backup (manifest, the dump's SHA-256, the assets' count) and stop.")
    var check = false

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.restore")
        do {
            if check {
                let manifest = try DatabaseRestore.check(input)
                print("\(input): a whole backup of \(manifest.source) taken \(manifest.createdAt): \(manifest.counts), \(manifest.assetFiles) asset(s)")
                return
            }
            let resolved = try await database.setup.resolve(logger: logger)
            let restore = DatabaseRestore(admin: resolved.admin, assetDirectory: noAssets ? nil : assets.directory(database),
                                          migrator: migrations.migrator(logger: logger), logger: logger)
            let manifest = try await restore.run(from: input) { print($0) }
            print("restored \(manifest.counts) into \(resolved.admin.displayURL)")
        } catch {
            throw fail(error)
        }
    }
}
