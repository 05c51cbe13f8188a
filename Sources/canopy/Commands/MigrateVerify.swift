import ArgumentParser
import CanopyStore

/// `canopy migrate verify`: fails if an applied migration was edited.
struct MigrateVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Fail, naming the file, if an applied migration's file was edited."
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    func run() async throws {
        try await withMigrator(database, migrations) { migrator, connection, _ in
            try await migrator.verify(connection: connection)
        }
        print("migrations: every applied file matches its checksum")
    }
}
