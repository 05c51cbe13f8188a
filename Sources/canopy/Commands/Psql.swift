import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy psql --as NAME`: psql as the gateway's role acting for a user, so
/// what it shows is exactly what row-level security lets that user see.
struct Psql: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run psql as canopy_gateway with a user's identity (RLS applies).",
        discussion: """
            The session sets canopy.user_id to the user's id (PGOPTIONS), so every query sees \
            only that user's rows. Arguments after -- go to psql, e.g.
              canopy psql --as alice -- -c "select record_name from canopy.records"
            """
    )

    @Option(name: .customLong("as"), help: "The user's name or userRecordName.")
    var user: String

    @OptionGroup var database: DatabaseOptions

    @Argument(parsing: .postTerminator, help: "Arguments for psql.")
    var psqlArguments: [String] = []

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.psql")
        let status: Int32
        do {
            let name = self.user
            let (found, resolved) = try await withAdminConnection(database, logger: logger) { connection, resolved in
                (try await UserAdmin(logger: logger).find(name, connection: connection), resolved)
            }
            let psql = (try? ServerPrograms.locate().psql) ?? "psql"
            guard let executable = psql.hasPrefix("/") ? psql : Subprocess.which("psql") else {
                throw StoreError(.postgresNotInstalled, "psql was not found; install it (apt-get install -y postgresql-client)")
            }
            var environment = ProcessInfo.processInfo.environment.merging(resolved.gateway.libpqEnvironment) { $1 }
            environment["PGOPTIONS"] = "-c canopy.user_id=\(found.id)"
            environment["PGAPPNAME"] = "canopy psql --as \(found.name)"
            status = try Subprocess.runInteractive(executable, psqlArguments, environment: environment)
        } catch {
            throw fail(error)
        }
        if status != 0 { throw ExitCode(status) }
    }
}
