import PostgresNIO

/// A statement's text with how to bind each of its values again from another
/// request of the same shape: what the plan cache keeps (issue 51), so a
/// request whose plan was made before binds its values and runs, without
/// writing SQL. Made by a recording ``SQLBuilder``.
public struct StatementTemplate: Sendable {
    /// Appends one bind, read from a request's values (or a constant).
    public typealias Replay = @Sendable (PlanValues, inout PostgresBindings) throws -> Void
    /// Reads one unbound owner's record name from a request's values
    /// (``SQLBuilder/owner(named:replaying:)``).
    public typealias OwnerReplay = @Sendable (PlanValues) throws -> String?

    public let sql: String
    /// The binds' types, then the unbound owners' (int8).
    public let parameterTypes: [PostgresDataType]
    /// Whether the text reads the caller's id as the parameter after these
    /// (``SQLBuilder/caller()``).
    public let namesCaller: Bool
    let replays: [Replay]
    let ownerReplays: [OwnerReplay]

    /// The statement for another request: this text, its values bound in the
    /// same order. Throws ``Mismatch`` when the values do not fit the shape
    /// (a key that missed a difference; the caller plans anew).
    public func statement(for values: PlanValues) throws -> SQLStatement {
        var binds = PostgresBindings(capacity: replays.count)
        for replay in replays { try replay(values, &binds) }
        let owners = try ownerReplays.map { try $0(values) }
        return SQLStatement(sql: sql, binds: binds, parameterTypes: parameterTypes, namesCaller: namesCaller, unboundOwners: owners)
    }

    /// A request's values that do not have the shape the template was made for.
    public struct Mismatch: Error, Sendable {
        public init() {}
    }
}

/// The values of one request that a ``StatementTemplate`` binds: what a
/// plan's check read and checked from the request's arguments. A template's
/// replays read them back by place (the zone's name, the predicate's test
/// at a path, a cursor key), so another request of the same shape binds its own.
public struct PlanValues: Sendable {
    var zone: ZoneReference?
    var limit: Int = 0
    public internal(set) var predicate: CheckedPredicate = .all
    var sortKeys: [RecordsPlan.SortKey] = []
    var cursorKeys: [JSONValue] = []
    var names: [String] = []
    /// Web Services' answers: the zone ID dictionary the records carry
    /// (JSON text) and the request's id, in every missing record's error.
    var cloudKitZoneID = ""
    var requestID = ""
}
