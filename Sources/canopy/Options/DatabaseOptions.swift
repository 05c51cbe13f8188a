import ArgumentParser
import CanopyStore
import Foundation
import Logging

/// The options every command shares: where the database is.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: ArgumentHelp("An administrator's PostgreSQL URL (env CANOPY_DATABASE_URL). Without it, the embedded cluster is used.", valueName: "url"))
    var databaseURL: String?

    @Option(name: .customLong("data-dir"), help: ArgumentHelp("The embedded cluster's directory (env CANOPY_DATA_DIR).", valueName: "dir"))
    var dataDirectory: String?

    @Flag(name: .long, help: "Log at debug level.")
    var verbose = false

    var setup: DatabaseSetup {
        DatabaseSetup.fromEnvironment(databaseURL: databaseURL, dataDirectory: dataDirectory)
    }

    func logger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = verbose ? .debug : .notice
        return logger
    }
}

/// Where the migration files are.
struct MigrationsOptions: ParsableArguments {
    @Option(name: .customLong("migrations-dir"), help: ArgumentHelp("Directory of NNNN_name.sql files (env CANOPY_MIGRATIONS_DIR, default ./migrations).", valueName: "dir"))
    var migrationsDirectory: String?

    var directory: String {
        migrationsDirectory ?? ProcessInfo.processInfo.environment["CANOPY_MIGRATIONS_DIR"] ?? "migrations"
    }
}

/// Prints a failure the way a person wants to read it and exits non-zero.
func fail(_ error: any Error) -> ExitCode {
    let message = (error as? StoreError)?.message ?? PostgresErrors.message(of: error)
    FileHandle.standardError.write(Data("canopy: \(message)\n".utf8))
    return ExitCode.failure
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data("\(text)\n".utf8))
}
