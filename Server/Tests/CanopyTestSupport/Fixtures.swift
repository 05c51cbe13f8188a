import CanopyAdmin
import CanopyRequestStore
import Foundation
import PostgresNIO

extension PostgresConnection {
    /// Runs a statement and returns the first column of every row as text.
    public func texts(_ query: PostgresQuery) async throws -> [String?] {
        var result: [String?] = []
        for try await row in try await self.query(query, logger: TestDatabase.logger) {
            result.append(try row.decode(String?.self))
        }
        return result
    }

    /// Runs a statement as the gateway role acting for `userID`, in a
    /// transaction that is rolled back (`commit`: committed when `body`
    /// succeeds, for a test's own rows); with `actAs`, saying so by
    /// `canopy.act_as`, as the gateway does on Citus.
    public func asUser<T: Sendable>(
        _ userID: Int64?, actAs: Bool = false, commit: Bool = false, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await query("BEGIN", logger: TestDatabase.logger)
        do {
            if actAs {
                // Citus carries SET LOCAL to its workers, not set_config.
                try await query("SELECT canopy.act_as(\(userID), NULL, NULL, NULL)", logger: TestDatabase.logger)
            } else {
                try await query("SELECT set_config('canopy.user_id', \(userID.map(String.init) ?? ""), true)", logger: TestDatabase.logger)
            }
            let result = try await body(self)
            try await query(commit ? "COMMIT" : "ROLLBACK", logger: TestDatabase.logger)
            return result
        } catch {
            _ = try? await query("ROLLBACK", logger: TestDatabase.logger)
            throw error
        }
    }
}

/// Creates a user through the same code the CLI uses.
public func addUser(_ name: String, email: String? = nil, on endpoint: DatabaseEndpoint) async throws -> (UserSummary, BearerToken) {
    try await TestDatabase.withConnection(endpoint) { connection in
        try await UserAdmin(logger: TestDatabase.logger).add(name: name, email: email, phone: nil, connection: connection)
    }
}
