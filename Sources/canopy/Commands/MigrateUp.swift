import ArgumentParser
import CanopyStore
import Foundation

/// `canopy migrate up`: applies every pending migration.
struct MigrateUp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Apply pending migrations (safe to run from many processes at once)."
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.migrate")
        do {
            let directory = migrations.directory
            let setup = database.setup
            let applied = try await withAdminConnection(database, logger: logger) { connection, _ in
                let applied = try await Migrator(directory: directory, logger: logger).up(connection: connection) { line in
                    print(line)
                }
                if let password = setup.gatewayPassword, setup.databaseURL != nil {
                    try await DatabaseSetup.setGatewayPassword(password, connection: connection, logger: logger)
                }
                return applied
            }
            print(applied.isEmpty ? "migrations: up to date" : "migrations: applied \(applied.count)")
        } catch {
            throw fail(error)
        }
    }
}
