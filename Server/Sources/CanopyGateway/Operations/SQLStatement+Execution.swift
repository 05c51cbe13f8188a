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
        let statement = try await bindingOwners(of: statement, logger: logger)
        return try await read(statement.postgresQuery, parameterTypes: statement.parameterTypes, as: userID, from: source, logger: logger, collect)
    }

    /// The statement with the ids of the owners it names by record name
    /// bound (on Citus: ``SQLStatement/unboundOwners``, DECISIONS 176).
    func bindingOwners(of statement: SQLStatement, logger: Logger) async throws -> SQLStatement {
        guard !statement.unboundOwners.isEmpty else { return statement }
        return statement.bindingOwners(try await ownerIDs(named: statement.unboundOwners, logger: logger))
    }
}

extension PostgresConnection {
    /// Runs a compiled statement on this connection, prepared by its shape,
    /// with the caller's id bound when it names them (a write's transaction,
    /// which acts for `userID` already).
    public func execute(_ statement: SQLStatement, as userID: Int64, logger: Logger) async throws -> [PostgresRow] {
        // On Citus, the owners it names: their shards held where they are
        // before it is routed to them (DECISIONS 180), their changes
        // announced when the transaction ends (172).
        try await CitusWriteOwners.current?.willRun(naming: statement.owners.ids, names: statement.owners.names, on: self, logger: logger)
        let statement = try await binding(statement, as: userID, logger: logger)
        return try await executeShaped(statement.postgresQuery, parameterTypes: statement.parameterTypes, logger: logger)
    }

    /// The statement with every parameter bound, as ``execute(_:as:logger:)``
    /// runs it: the ids of the owners it names by record name, read on this
    /// connection (on Citus: ``SQLStatement/unboundOwners``, DECISIONS 176),
    /// then the caller's when it names them.
    public func binding(_ statement: SQLStatement, as userID: Int64, logger: Logger) async throws -> SQLStatement {
        var statement = statement
        if !statement.unboundOwners.isEmpty {
            let ids = try await ownerIDs(named: statement.unboundOwners.compactMap { $0 }, logger: logger)
            statement = statement.bindingOwners(statement.unboundOwners.map { $0.flatMap { ids[$0] } })
        }
        return statement.bindingCaller(userID)
    }
}
