import Foundation
import Logging
import PostgresNIO

/// The gateway's way into PostgreSQL: a pool of connections as
/// `canopy_gateway` (no BYPASSRLS), and one rule for using them: every
/// request runs in a transaction that first says who is asking with
/// `set_config('canopy.user_id', …, true)`. Row-level security does the rest.
public final class GatewayDatabase: Sendable {
    public let client: PostgresClient
    /// Signing keys, fetched from the database once.
    public let secrets: ServerSecrets
    let logger: Logger
    /// How long a request waits for the database before it is 503.
    let availabilityTimeout: Duration

    public init(endpoint: DatabaseEndpoint, maximumConnections: Int = 20, availabilityTimeout: Duration = .seconds(5), logger: Logger) throws {
        var configuration = try endpoint.clientConfiguration()
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = availabilityTimeout
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.secrets = ServerSecrets(client: client)
        self.logger = logger
        self.availabilityTimeout = availabilityTimeout
    }

    /// Who a bearer token belongs to, or nil for an unknown or malformed
    /// token. The stored hash is compared here, in constant time.
    public func authenticate(token: String, logger: Logger) async throws -> Int64? {
        guard let presented = BearerToken(parsing: token) else { return nil }
        let client = self.client
        let stored: (Int64, Data)? = try await withTimeout(availabilityTimeout) {
            let rows = try await client.query(
                "SELECT user_id, secret_hash FROM canopy.token_for_selector(\(presented.selector)) WHERE user_id IS NOT NULL",
                logger: logger
            )
            for try await row in rows.decode((Int64, Data).self) { return row }
            return nil
        }
        guard let (userID, storedHash) = stored else { return nil }
        return BearerToken.constantTimeEqual(Array(storedHash), presented.secretHash) ? userID : nil
    }

    /// Runs `body` in one transaction acting for `userID`.
    public func withUser<Result: Sendable>(
        _ userID: Int64,
        logger: Logger,
        statementTimeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await client.withConnection { connection in
            try await connection.inTransaction(logger: logger) { connection in
                let timeout = statementTimeout.map { "\($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000)" } ?? "0"
                try await connection.query(
                    "SELECT set_config('canopy.user_id', \(String(userID)), true), set_config('statement_timeout', \(timeout), true)",
                    logger: logger
                )
                return try await body(connection)
            }
        }
    }

    /// True when the database answers.
    public func isHealthy(logger: Logger) async -> Bool {
        do {
            return try await withTimeout(availabilityTimeout) {
                try await self.client.query("SELECT 1", logger: logger)
                return true
            }
        } catch {
            return false
        }
    }
}

/// Runs `body`, failing with `StoreError.databaseUnavailable` after `timeout`.
func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw StoreError(.databaseUnavailable, "the database did not answer within \(timeout)")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
