import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Logging
import PostgresNIO

/// Resolves the database (starting the embedded cluster if needed), opens one
/// administrator connection for `body`, and closes it afterwards.
func withAdminConnection<T: Sendable>(
    _ options: DatabaseOptions,
    logger: Logger,
    _ body: (PostgresConnection, DatabaseSetup.Resolved) async throws -> T
) async throws -> T {
    let resolved = try await options.setup.resolve(logger: logger)
    let connection = try await DatabaseSetup.connect(resolved.admin, logger: logger)
    do {
        let result = try await body(connection, resolved)
        try? await connection.close()
        return result
    } catch {
        try? await connection.close()
        throw error
    }
}

/// Bootstraps logging once per process, to standard error.
enum CommandLogging {
    static func bootstrap(verbose: Bool) {
        LoggingSystem.bootstrap { label in
            var handler = DeferredMetadataLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .info
            return handler
        }
    }
}

/// What every `canopy migrate` subcommand that talks to the database does
/// around its work: logging, the administrator connection, and a failure in
/// words.
func withMigrator<T: Sendable>(
    _ database: DatabaseOptions,
    _ migrations: MigrationsOptions,
    _ body: (Migrator, PostgresConnection, DatabaseSetup.Resolved) async throws -> T
) async throws -> T {
    CommandLogging.bootstrap(verbose: database.verbose)
    let logger = database.logger("canopy.migrate")
    let migrator = migrations.migrator(logger: logger)
    do {
        return try await withAdminConnection(database, logger: logger) { connection, resolved in
            try await body(migrator, connection, resolved)
        }
    } catch {
        throw fail(error)
    }
}

/// What every `canopy users` and `canopy roles` subcommand does around its
/// work: logging under `category`, the administrator connection, the
/// administration made for that logger, and a failure in words.
func withAdministration<Admin, T: Sendable>(
    _ database: DatabaseOptions, category: String, _ make: (Logger) -> Admin,
    _ body: (Admin, PostgresConnection) async throws -> T
) async throws -> T {
    CommandLogging.bootstrap(verbose: database.verbose)
    let logger = database.logger(category)
    do {
        return try await withAdminConnection(database, logger: logger) { connection, _ in
            try await body(make(logger), connection)
        }
    } catch {
        throw fail(error)
    }
}

/// `canopy users`: ``UserAdmin`` on an administrator's connection.
func withUserAdmin<T: Sendable>(
    _ database: DatabaseOptions,
    _ body: (UserAdmin, PostgresConnection) async throws -> T
) async throws -> T {
    try await withAdministration(database, category: "canopy.users", UserAdmin.init(logger:), body)
}

/// `canopy roles`: ``RoleAdmin`` on an administrator's connection.
func withRoleAdmin<T: Sendable>(
    _ database: DatabaseOptions,
    _ body: (RoleAdmin, PostgresConnection) async throws -> T
) async throws -> T {
    try await withAdministration(database, category: "canopy.roles", RoleAdmin.init(logger:), body)
}

/// `canopy tokens api`: ``ContainerTokenAdmin`` on an administrator's connection.
func withContainerTokenAdmin<T: Sendable>(
    _ database: DatabaseOptions,
    _ body: (ContainerTokenAdmin, PostgresConnection) async throws -> T
) async throws -> T {
    try await withAdministration(database, category: "canopy.tokens", ContainerTokenAdmin.init(logger:), body)
}

/// `canopy keys`: ``ServerKeyAdmin`` on an administrator's connection.
func withServerKeyAdmin<T: Sendable>(
    _ database: DatabaseOptions,
    _ body: (ServerKeyAdmin, PostgresConnection) async throws -> T
) async throws -> T {
    try await withAdministration(database, category: "canopy.keys", ServerKeyAdmin.init(logger:), body)
}

/// `canopy quotas`: ``StorageQuotaAdmin`` and ``UserAdmin`` (to find users)
/// on an administrator's connection.
func withQuotaAdmin<T: Sendable>(
    _ database: DatabaseOptions,
    _ body: (StorageQuotaAdmin, UserAdmin, PostgresConnection) async throws -> T
) async throws -> T {
    try await withAdministration(database, category: "canopy.quotas", { logger in (StorageQuotaAdmin(logger: logger), UserAdmin(logger: logger)) }) { admins, connection in
        try await body(admins.0, admins.1, connection)
    }
}
