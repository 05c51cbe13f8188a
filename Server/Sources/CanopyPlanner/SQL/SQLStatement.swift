import PostgresNIO

/// A compiled statement: SQL text, its bound values, and the PostgreSQL
/// type of each parameter. The types are part of the statement's shape, so
/// that the gateway can prepare it once per connection and reuse it for
/// every request of the same shape, whatever the values.
public struct SQLStatement: Sendable, Hashable {
    public var sql: String
    public var binds: PostgresBindings
    /// One per bind, in order: the type a prepared statement declares.
    public var parameterTypes: [PostgresDataType]

    public init(sql: String, binds: PostgresBindings, parameterTypes: [PostgresDataType]) {
        precondition(binds.count == parameterTypes.count, "one parameter type per bind")
        self.sql = sql
        self.binds = binds
        self.parameterTypes = parameterTypes
    }

    /// The statement as PostgresNIO's unnamed query (for `EXPLAIN`, tests
    /// and one-off use).
    public var postgresQuery: PostgresQuery {
        PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}
