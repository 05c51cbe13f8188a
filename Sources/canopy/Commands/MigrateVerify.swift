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
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.migrate")
        do {
            let directory = migrations.directory
            try await withAdminConnection(database, logger: logger) { connection, _ in
                try await Migrator(directory: directory, logger: logger).verify(connection: connection)
            }
            print("migrations: every applied file matches its checksum")
        } catch {
            throw fail(error)
        }
    }
}
