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
    /// The owners whose zones the statement names besides the caller (by
    /// id, or by record name for a zone of the shared database): on Citus
    /// a write transaction ends by announcing the changes of their zones
    /// (`canopy.announce_changes`, DECISIONS 172). Not part of the text.
    public var owners: NamedOwners
    /// The record names of the owners whose ids are parameters after
    /// ``binds``, which whoever runs the statement looks up and binds
    /// (``bindingOwners(_:)``) before the caller's; empty but on Citus
    /// (``SQLBuilder/owner(named:replaying:)``, DECISIONS 176).
    /// ``parameterTypes`` has their types already.
    public var unboundOwners: [String?]

    public init(
        sql: String, binds: PostgresBindings, parameterTypes: [PostgresDataType], namesCaller: Bool = false, owners: NamedOwners = NamedOwners(),
        unboundOwners: [String?] = []
    ) {
        precondition(binds.count + unboundOwners.count == parameterTypes.count, "one parameter type per bind and unbound owner")
        self.sql = sql
        self.binds = binds
        self.parameterTypes = parameterTypes
        self.namesCaller = namesCaller
        self.owners = owners
        self.unboundOwners = unboundOwners
    }

    /// The statement with its unbound owners' ids bound, in order (nil for
    /// a name that is nobody's: no zone's owner is NULL).
    public func bindingOwners(_ ids: [Int64?]) -> SQLStatement {
        precondition(ids.count == unboundOwners.count, "one id per unbound owner")
        guard !ids.isEmpty else { return self }
        var binds = self.binds
        for id in ids { binds.append(id) }
        return SQLStatement(sql: sql, binds: binds, parameterTypes: parameterTypes, namesCaller: namesCaller, owners: owners)
    }

    /// The statement with the caller's id bound, for running on a
    /// connection that acts for them already (a write's transaction).
    public func bindingCaller(_ userID: Int64?) -> SQLStatement {
        precondition(unboundOwners.isEmpty, "the owners' ids are bound before the caller's")
        guard namesCaller else { return self }
        var binds = self.binds
        binds.append(userID)
        return SQLStatement(sql: sql, binds: binds, parameterTypes: parameterTypes + [.int8], owners: owners)
    }

    /// The same text, values and types: ``owners`` is not the statement's
    /// (a plan cache's replay does not carry it, and need not: only writes
    /// announce, and writes are planned afresh).
    public static func == (lhs: SQLStatement, rhs: SQLStatement) -> Bool {
        lhs.sql == rhs.sql && lhs.binds == rhs.binds && lhs.parameterTypes == rhs.parameterTypes && lhs.namesCaller == rhs.namesCaller
            && lhs.unboundOwners == rhs.unboundOwners
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(sql)
        hasher.combine(binds)
        hasher.combine(parameterTypes)
        hasher.combine(namesCaller)
        hasher.combine(unboundOwners)
    }

    /// The statement as PostgresNIO's unnamed query (for `EXPLAIN`, tests
    /// and one-off use).
    public var postgresQuery: PostgresQuery {
        PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}

/// Zones' owners a statement names, by id and by record name
/// (``SQLStatement/owners``).
public struct NamedOwners: Sendable, Hashable {
    public var ids: [Int64] = []
    public var names: [String] = []

    public init() {}
}
