import ArgumentParser
import CanopyAdmin
import CanopyRequestStore

/// `canopy migrate up`: applies every pending versioned migration, then
/// every repeatable file of sql/ that changed.
struct MigrateUp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Apply pending migrations, then the changed files of sql/ (safe to run from many processes at once).",
        discussion: """
            Versioned files (migrations/NNNN_name.sql) are applied once each, in order, each in its own transaction; a new \
            database applies migrations/baseline/ instead of migrations/archive/. Then every repeatable file of sql/ whose \
            text differs from what the database runs is applied again, in the order of sql/manifest.txt, all in one \
            transaction: a failure names the file and line and leaves the database's code as it was.

            With --distribute, on a Citus coordinator, the tables then go to their places on the cluster \
            (docs/CITUS.md): a zone's rows sharded by their owner, a user's by the user, the small tables copied \
            to every node, the rest left on the coordinator. One transaction: a failure leaves every table where \
            it was. A second run places only what is not placed yet. `canopy serve` serves either. Shards are moved with \
            shard_transfer_mode => 'block_writes' (docs/DEPLOYMENT.md).
            """
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    @Flag(help: "On a Citus coordinator, distribute Canopy's tables after migrating (docs/CITUS.md).")
    var distribute = false

    func run() async throws {
        let setup = database.setup
        let applied = try await withMigrator(database, migrations) { migrator, connection, _ in
            let applied = try await migrator.up(connection: connection) { print($0) }
            if distribute {
                let placed = try await CitusDistribution.distribute(connection, logger: migrator.logger) { print($0) }
                print(placed.isEmpty ? "distribution: every table in its place already" : "distribution: placed \(placed.count) tables")
            }
            if let password = setup.gatewayPassword, setup.databaseURL != nil {
                try await DatabaseSetup.setGatewayPassword(password, connection: connection, logger: migrator.logger)
            }
            return applied
        }
        print(applied.isEmpty ? "migrations: up to date" : "migrations: applied \(applied.count)")
    }
}
