import ArgumentParser
import CanopyAdmin
import CanopyRequestStore

/// `canopy migrate verify`: fails if an applied migration was edited.
struct MigrateVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Fail, naming the file, if an applied versioned migration's file was edited; list the repeatable files that differ from the database.",
        discussion: "A repeatable file of sql/ that differs from what the database runs is not a failure: `canopy migrate up` applies it again."
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    func run() async throws {
        let changed = try await withMigrator(database, migrations) { migrator, connection, _ in
            try await migrator.verify(connection: connection)
        }
        print("migrations: every applied file matches its checksum")
        if changed.isEmpty {
            print("sql: the database runs every repeatable file as it is")
        } else {
            print("sql: \(changed.count) repeatable file(s) differ from the database; `canopy migrate up` applies them:")
            for name in changed { print("  \(name)") }
        }
    }
}
