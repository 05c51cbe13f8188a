import ArgumentParser
import CanopyAdmin
import CanopyPlanner
import CanopyRequestStore

/// `canopy schema export`: the schema the database holds, in the schema language.
struct SchemaExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print the database's schema (declared and inferred types, indexes, grants) in the schema language.",
        discussion: "What it prints, applied again, changes nothing: canopy schema export | canopy schema apply - is a no-op."
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.schema")
        let migrator = migrations.migrator(logger: logger)
        let document: RecordTypesDocument
        do {
            document = try await withAdminConnection(database, logger: logger) { connection, _ in
                try await migrator.up(connection: connection) { _ in }
                return StoredRecordTypes.document(
                    fields: try await RecordTypeCatalog.fields(connection: connection, logger: logger),
                    grants: try await RecordTypeCatalog.grants(connection: connection, logger: logger),
                    roles: try await RecordTypeCatalog.roles(connection: connection, logger: logger),
                    declaringGrantedRoles: true
                )
            }
        } catch {
            throw fail(error)
        }
        print(RecordTypesPrinter.print(document), terminator: "")
    }
}
