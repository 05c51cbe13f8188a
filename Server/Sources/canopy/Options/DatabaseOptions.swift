import ArgumentParser
import CanopyAdmin
import CanopyAssets
import CanopyGateway
import CanopyIdentity
import CanopyPush
import CanopyRequestStore
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

/// Where the database's files are: the versioned migrations and the
/// repeatable code.
struct MigrationsOptions: ParsableArguments {
    @Option(name: .customLong("migrations-dir"), help: ArgumentHelp("Directory of versioned NNNN_name.sql files, with baseline/ and archive/ (env CANOPY_MIGRATIONS_DIR, default ./migrations).", valueName: "dir"))
    var migrationsDirectory: String?

    @Option(name: .customLong("sql-dir"), help: ArgumentHelp("Directory of the repeatable SQL files and their manifest.txt: functions, triggers, policies (env CANOPY_SQL_DIR, default: sql beside the migrations directory).", valueName: "dir"))
    var sqlDirectory: String?

    var directory: String {
        migrationsDirectory ?? ProcessInfo.processInfo.environment["CANOPY_MIGRATIONS_DIR"] ?? "migrations"
    }

    var codeDirectory: String {
        sqlDirectory ?? ProcessInfo.processInfo.environment["CANOPY_SQL_DIR"] ?? Migrator.defaultCodeDirectory(besides: directory)
    }

    func migrator(logger: Logger) -> Migrator {
        Migrator(directory: directory, codeDirectory: codeDirectory, logger: logger)
    }
}

/// Prints a failure the way a person wants to read it and exits non-zero.
func fail(_ error: any Error) -> ExitCode {
    let message = (error as? StoreError)?.message ?? (error as? IdentityError)?.message ?? (error as? AssetError)?.message
        ?? (error as? GatewayConfigurationError)?.message ?? (error as? PushError)?.message
        ?? PostgresErrors.message(of: error)
    FileHandle.standardError.write(Data("canopy: \(message)\n".utf8))
    return ExitCode.failure
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data("\(text)\n".utf8))
}
