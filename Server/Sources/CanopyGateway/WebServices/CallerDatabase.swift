import CanopyAssets
import CanopyPlanner
import CanopyRequestStore
import Logging
import PostgresNIO

/// How a Web Services request reaches the database as its caller: a
/// plan's statement, read or written (``read(_:from:_:)``,
/// ``write(_:_:)``), and the keys its cursors and change tokens are sealed
/// with. Every endpoint builds the planner's typed inputs and runs them
/// here; no GraphQL document is involved (DECISIONS 112).
struct CallerDatabase {
    let database: RequestDatabase
    let userID: Int64?
    let logger: Logger
    /// Signs asset download URLs into answers that hold assets (nil: no asset store).
    let assetURLs: (@Sendable (Logger) async throws -> AssetURLSigner)?

    /// Runs a planner's statement as the caller, in one round trip on the
    /// pool: the typed path, with no GraphQL document in between.
    func read<T: Sendable>(
        _ statement: SQLStatement, from source: RequestDatabase.ReadSource = .primary,
        _ collect: @escaping @Sendable ([PostgresRow]) throws -> T
    ) async throws -> T {
        try await database.read(statement, as: userID, from: source, logger: logger, collect)
    }

    /// Runs a planner's writing statement as the caller, in a transaction.
    func write<T: Sendable>(_ statement: SQLStatement, _ collect: @escaping @Sendable ([PostgresRow]) throws -> T) async throws -> T {
        guard let userID else { throw APIError(.notAuthenticated, "sign in first: only the public database's reads are open without a token") }
        let logger = self.logger
        return try await database.withUser(userID, device: nil, logger: logger) { connection in
            try collect(try await connection.execute(statement, logger: logger))
        }
    }

    /// The key records cursors (`continuationMarker`s) are signed with.
    func cursorKey() async throws -> SigningKey {
        let keys = try await database.secrets.keys("cursor", logger: logger)
        return SigningKey(keys.current, accepted: keys.accepted)
    }

    /// The key change tokens are sealed with.
    func changeTokenKey() async throws -> SigningKey {
        let keys = try await database.secrets.keys("change-token", logger: logger)
        return SigningKey(keys.current, accepted: keys.accepted, retired: keys.retired)
    }
}
