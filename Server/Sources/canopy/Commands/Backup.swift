import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy backup DIR`: the database and the assets its records reference,
/// from one snapshot, into a new directory (docs/BACKUP.md).
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Back up the database (pg_dump) and the assets its records reference into a new directory.",
        discussion: """
            The dump and the list of assets come from one snapshot, so the backup is consistent while \
            gateways keep serving. The directory holds canopy.dump (pg_dump's custom format), assets/ \
            (each file named by its SHA-256) and manifest.json (sizes, checksums, row counts); it is \
            written as DIR.partial and renamed when whole. The administrator's role must read every row \
            (a superuser, or a role with BYPASSRLS). Put it back with `canopy restore DIR`.
            """
    )

    @Argument(help: ArgumentHelp("The directory to write; it must not exist.", valueName: "dir"))
    var output: String

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var assets: AssetDirectoryOptions

    @Flag(name: .customLong("no-assets"), help: "Back up the database alone (assets kept elsewhere, e.g. an object store with its own backups).")
    var noAssets = false

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.backup")
        do {
            let resolved = try await database.setup.resolve(logger: logger)
            let backup = DatabaseBackup(admin: resolved.admin, assetDirectory: noAssets ? nil : assets.directory(database), logger: logger)
            let manifest = try await backup.write(to: output) { print($0) }
            print("backed up \(manifest.counts) and \(manifest.assetFiles) asset(s) to \(output)")
        } catch {
            throw fail(error)
        }
    }
}
