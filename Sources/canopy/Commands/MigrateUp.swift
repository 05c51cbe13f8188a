import ArgumentParser
import CanopyStore

/// `canopy migrate up`: applies every pending migration.
struct MigrateUp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Apply pending migrations (safe to run from many processes at once)."
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    func run() async throws {
        let setup = database.setup
        let applied = try await withMigrator(database, migrations) { migrator, connection, _ in
            let applied = try await migrator.up(connection: connection) { print($0) }
            if let password = setup.gatewayPassword, setup.databaseURL != nil {
                try await DatabaseSetup.setGatewayPassword(password, connection: connection, logger: migrator.logger)
            }
            return applied
        }
        print(applied.isEmpty ? "migrations: up to date" : "migrations: applied \(applied.count)")
    }
}
