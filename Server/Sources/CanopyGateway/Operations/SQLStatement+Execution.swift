import CanopyPlanner
import CanopyRequestStore
import Logging
import PostgresNIO

/// Compiled statements run prepared by their shape, on the pool for reads
/// and on the request's connection for writes.
extension RequestDatabase {
    /// Runs a compiled read for `userID` (see ``RequestDatabase/read(_:parameterTypes:as:logger:_:)``).
    public func read<Result: Sendable>(
        _ statement: SQLStatement, as userID: Int64?, from source: ReadSource = .primary, logger: Logger,
        _ collect: @escaping @Sendable ([PostgresRow]) throws -> Result
    ) async throws -> Result {
        try await read(statement.postgresQuery, parameterTypes: statement.parameterTypes, as: userID, from: source, logger: logger, collect)
    }
}

extension PostgresConnection {
    /// Runs a compiled statement on this connection, prepared by its shape,
    /// with the caller's id bound when it names them (a write's transaction,
    /// which acts for `userID` already).
    public func execute(_ statement: SQLStatement, as userID: Int64, logger: Logger) async throws -> [PostgresRow] {
        // On Citus, the owners whose changes the transaction announces.
        ChangeAnnouncement.current?.note(ids: statement.owners.ids, names: statement.owners.names)
        let statement = statement.bindingCaller(userID)
        return try await executeShaped(statement.postgresQuery, parameterTypes: statement.parameterTypes, logger: logger)
    }
}
