import PostgresNIO
import Testing

/// Runs `body`, and records PostgreSQL's own message when it fails: a
/// PSQLError describes itself only as "Generic description".
func explained<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as PSQLError {
        Issue.record("PostgreSQL: \(error.serverInfo?[.message] ?? String(reflecting: error))")
        throw error
    }
}
