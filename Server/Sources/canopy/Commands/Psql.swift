import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy psql --as NAME` (or `--anonymous`): psql as the gateway's role
/// acting for a user (or for nobody, a request without a token), so what
/// it shows is exactly what row-level security lets that caller see.
struct Psql: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run psql as canopy_gateway with a user's identity (RLS applies).",
        discussion: """
            The session sets canopy.user_id to the user's id (PGOPTIONS), so every query sees \
            only that user's rows. With --anonymous it sets none: the session sees what a request \
            without a token sees, the public database's records that _world may READ. \
            Arguments after -- go to psql, e.g.
              canopy psql --as alice -- -c "select record_name from canopy.records"
              canopy psql --anonymous -- -c "select record_type, record_name from canopy.records"
            """
    )

    @Option(name: .customLong("as"), help: "The user's name or userRecordName.")
    var user: String?

    @Flag(name: .customLong("anonymous"), help: "Act for nobody: what a request without a token may read (the public database's _world grants).")
    var anonymous = false

    @OptionGroup var database: DatabaseOptions

    @Argument(parsing: .postTerminator, help: "Arguments for psql.")
    var psqlArguments: [String] = []

    func validate() throws {
        guard (user != nil) != anonymous else {
            throw ValidationError("give exactly one of --as USER and --anonymous")
        }
    }

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.psql")
        let status: Int32
        do {
            let name = self.user
            let (found, resolved) = try await withAdminConnection(database, logger: logger) { connection, resolved in
                (try await name.asyncMap { try await UserAdmin(logger: logger).find($0, connection: connection) }, resolved)
            }
            let psql = (try? ServerPrograms.locate().psql) ?? "psql"
            guard let executable = psql.hasPrefix("/") ? psql : Subprocess.which("psql") else {
                throw StoreError(.postgresNotInstalled, "psql was not found; install it (apt-get install -y postgresql-client)")
            }
            var environment = ProcessInfo.processInfo.environment.merging(resolved.gateway.libpqEnvironment) { $1 }
            if let found {
                environment["PGOPTIONS"] = "-c canopy.user_id=\(found.id)"
                environment["PGAPPNAME"] = "canopy psql --as \(found.name)"
            } else {
                environment["PGOPTIONS"] = "-c canopy.user_id="
                environment["PGAPPNAME"] = "canopy psql --anonymous"
            }
            status = try Subprocess.runInteractive(executable, psqlArguments, environment: environment)
        } catch {
            throw fail(error)
        }
        if status != 0 { throw ExitCode(status) }
    }
}

extension Optional {
    /// `map` with an async transform.
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
