import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy migrate status`: which versioned and repeatable files are
/// applied, pending, edited, missing, changed or skipped.
struct MigrateStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "List versioned migrations and the repeatable files of sql/ with their state.",
        discussion: """
            Versioned files: applied, pending, edited (changed after applying: an error), missing (applied, file gone: an error), \
            or skipped (the baseline, in a database the archived files built). Repeatable files (sql/PATH): applied, \
            pending (never applied) or changed (differs from what the database runs; `migrate up` applies it again).
            """
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
