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
    /// Whether the text reads the caller's id (int8, NULL for nobody) as
    /// the parameter after ``binds``, which whoever runs it binds: a read's
    /// identity wrapper binds it always (``PreparedRead``), a write's
    /// runner when this says so (``SQLBuilder/caller()``).
    public var namesCaller: Bool

    public init(sql: String, binds: PostgresBindings, parameterTypes: [PostgresDataType], namesCaller: Bool = false) {
        precondition(binds.count == parameterTypes.count, "one parameter type per bind")
        self.sql = sql
        self.binds = binds
        self.parameterTypes = parameterTypes
        self.namesCaller = namesCaller
    }

    /// The statement with the caller's id bound, for running on a
    /// connection that acts for them already (a write's transaction).
    public func bindingCaller(_ userID: Int64?) -> SQLStatement {
        guard namesCaller else { return self }
        var binds = self.binds
        binds.append(userID)
        return SQLStatement(sql: sql, binds: binds, parameterTypes: parameterTypes + [.int8])
    }

    /// The statement as PostgresNIO's unnamed query (for `EXPLAIN`, tests
    /// and one-off use).
    public var postgresQuery: PostgresQuery {
        PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}
