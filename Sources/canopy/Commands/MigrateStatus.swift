import ArgumentParser
import CanopyStore
import Foundation

/// `canopy migrate status`: which files are applied, pending, edited or missing.
struct MigrateStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "List migrations: applied, pending, edited (changed after applying) or missing (applied, file gone)."
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    func run() async throws {
        let statuses = try await withMigrator(database, migrations) { migrator, connection, _ in
            try await migrator.status(connection: connection)
        }
        let formatter = ISO8601DateFormatter()
        for status in statuses {
            let when = status.appliedAt.map { formatter.string(from: $0) } ?? ""
            print("\(status.state.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(status.name) \(when)")
        }
        if statuses.contains(where: { $0.state == .edited || $0.state == .missing }) {
            throw ExitCode.failure
        }
    }
}
