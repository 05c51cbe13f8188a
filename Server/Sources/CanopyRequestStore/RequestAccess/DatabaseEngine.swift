import Logging
import PostgresNIO

/// What the gateway's database is: one PostgreSQL, or a Citus cluster's
/// coordinator (issue 67, docs/CITUS.md). The one switch where the two
/// must differ at request time: how a transaction says who it acts for.
/// On one PostgreSQL a read sets it inside its own single statement
/// (`set_config` in a lateral join the read depends on); Citus does not carry
/// `set_config` to its workers, so there every request runs in an explicit
/// transaction that calls `canopy.act_as` first (SET LOCAL, carried).
public enum DatabaseEngine: String, Sendable {
    case postgres
    case citus

    /// Citus when its extension is in the connected database.
    public static func detect(on connection: PostgresConnection, logger: Logger) async throws -> DatabaseEngine {
        let rows = try await connection.query("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')", logger: logger)
        for try await citus in rows.decode(Bool.self) where citus {
            return .citus
        }
        return .postgres
    }
}
