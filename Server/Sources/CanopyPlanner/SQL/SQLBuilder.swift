import PostgresNIO

/// Builds one statement: SQL text made only of ``SQL`` fragments, and every
/// value from a client appended as a bind parameter (`$n`), never into the
/// text.
///
/// A builder made ``init(recording:)`` also keeps, for each bind, how to
/// bind it again for another request of the same shape (``StatementTemplate``):
/// a value read from the request's ``PlanValues`` by the closure its bind site
/// gives, or else the value itself, as a constant of the shape (a response
/// key, a configured URL). The plan cache (issue 51) reuses the text and
/// replays only these.
public struct SQLBuilder: Sendable {
    public private(set) var sql = ""
    public private(set) var binds = PostgresBindings()
    /// The declared type of each bind, so the statement can be prepared.
    public private(set) var parameterTypes: [PostgresDataType] = []
    /// One per bind when recording, else empty.
    private(set) var replays: [StatementTemplate.Replay] = []
    let recording: Bool
    /// Whether the text names the caller (``caller()``).
    private(set) var namesCaller = false
    /// The zones' owners the statement names (``SQLStatement/owners``).
    private(set) var owners = NamedOwners()
    /// The owners the text names by id but the request by record name, one
    /// per ``owner(named:replaying:)``: their ids are parameters after the
    /// binds, which the statement's runner binds (``SQLStatement/unboundOwners``).
    private(set) var unboundOwners: [String?] = []
    /// One per unbound owner when recording, else empty.
    private(set) var ownerReplays: [StatementTemplate.OwnerReplay] = []

    private var aliases = 0

    public init() {
        recording = false
    }

    /// A builder that also keeps how to bind each value again.
    public init(recording: Bool) {
        self.recording = recording
    }

    /// A table alias not used before in this statement, for subqueries
    /// that may nest (a share's zone's share).
    public mutating func alias(_ base: StaticString) -> SQL {
        aliases += 1
        return SQL(unescaped: "\(base)\(aliases)")
    }

    public mutating func append(_ fragment: SQL) {
        sql += fragment.text
    }

    /// Binds a value; returns its placeholder. Recording, the value is a
    /// constant of the shape: a value that comes from the request's
    /// arguments is bound with ``bind(_:replaying:)`` instead.
    public mutating func bind<Value: PostgresNonThrowingEncodable & Sendable>(_ value: Value) -> SQL {
        binds.append(value)
        parameterTypes.append(Value.psqlType)
        if recording { replays.append { _, binds in binds.append(value) } }
        return "$\(binds.count)"
    }

    /// Binds an optional value (NULL when nil); returns its placeholder.
    public mutating func bind<Value: PostgresNonThrowingEncodable & Sendable>(_ value: Value?) -> SQL {
        binds.append(value)
        parameterTypes.append(Value.psqlType)
        if recording { replays.append { _, binds in binds.append(value) } }
        return "$\(binds.count)"
    }

    /// Binds a value of this request that another request of the same shape
    /// has its own of: `read` finds that one in the other request's values.
    public mutating func bind<Value: PostgresNonThrowingEncodable & Sendable>(
        _ value: Value, replaying read: @escaping @Sendable (PlanValues) throws -> Value
    ) -> SQL {
        binds.append(value)
        parameterTypes.append(Value.psqlType)
        if recording { replays.append { values, binds in binds.append(try read(values)) } }
        return "$\(binds.count)"
    }

    /// ``bind(_:replaying:)`` for an optional value (NULL when nil).
    public mutating func bind<Value: PostgresNonThrowingEncodable & Sendable>(
        _ value: Value?, replaying read: @escaping @Sendable (PlanValues) throws -> Value?
    ) -> SQL {
        binds.append(value)
        parameterTypes.append(Value.psqlType)
        if recording { replays.append { values, binds in binds.append(try read(values)) } }
        return "$\(binds.count)"
    }

    /// Binds a JSON value (sent as text, cast to jsonb).
    public mutating func bind(json value: JSONValue) -> SQL {
        "(\(bind(value.jsonText))::text)::jsonb"
    }

    /// ``bind(json:)`` of a value of the request.
    public mutating func bind(json value: JSONValue, replaying read: @escaping @Sendable (PlanValues) throws -> JSONValue) -> SQL {
        "(\(bind(value.jsonText, replaying: { try read($0).jsonText }))::text)::jsonb"
    }

    /// Binds a response key (always text).
    public mutating func key(_ name: String) -> SQL {
        "\(bind(name))::text"
    }

    /// The caller's id, as a parameter the statement's runner binds (its
    /// last, after every value bound here: ``SQLStatement/namesCaller``),
    /// not `canopy.current_user_id()`: Citus routes a statement to one
    /// shard only by a value it is given for the distribution column
    /// (DECISIONS 168). Row-level security still decides what the caller
    /// may reach; this says only which owner's rows to look at.
    public mutating func caller() -> SQL {
        namesCaller = true
        return SQL(unescaped: "(\(Self.callerMarker)::int8)")
    }

    /// The id of the owner a request names by record name, as a parameter
    /// the statement's runner binds (``SQLStatement/bindingOwners(_:)``),
    /// after every value bound here and before the caller: Citus routes a
    /// statement to one shard only by a value it is given for the
    /// distribution column, and plans some statements (a lookup's records
    /// with their shares) only when it can (DECISIONS 176). `read` finds
    /// another request's owner, as ``bind(_:replaying:)`` does.
    public mutating func owner(named name: String?, replaying read: @escaping @Sendable (PlanValues) throws -> String?) -> SQL {
        unboundOwners.append(name)
        if recording { ownerReplays.append(read) }
        return SQL(unescaped: "(\(Self.ownerMarker(unboundOwners.count - 1))::int8)")
    }

    /// Notes an owner whose zones the statement names, by id or by record
    /// name: on Citus a write announces their zones' changes at its end.
    public mutating func noteOwner(id: Int64) {
        owners.ids.append(id)
    }

    public mutating func noteOwner(named name: String?) {
        if let name { owners.names.append(name) }
    }

    /// Stands for the caller's parameter until the statement is complete:
    /// not SQL (`$` then a letter), so nothing bound or written can hold it.
    static let callerMarker = "$caller"

    /// Stands for the `index`th unbound owner's parameter, as ``callerMarker`` does.
    static func ownerMarker(_ index: Int) -> String {
        "$owner{\(index)}"
    }

    /// The text with the unbound owners' parameters numbered after the
    /// binds, then the caller's after them.
    private var finishedSQL: String {
        var sql = self.sql
        for index in unboundOwners.indices {
            sql = sql.replacingOccurrences(of: Self.ownerMarker(index), with: "$\(binds.count + index + 1)")
        }
        if namesCaller { sql = sql.replacingOccurrences(of: Self.callerMarker, with: "$\(binds.count + unboundOwners.count + 1)") }
        return sql
    }

    /// The binds' types, then the unbound owners' (int8).
    private var allParameterTypes: [PostgresDataType] {
        parameterTypes + Array(repeating: .int8, count: unboundOwners.count)
    }

    public var query: SQLStatement {
        SQLStatement(
            sql: finishedSQL, binds: binds, parameterTypes: allParameterTypes, namesCaller: namesCaller, owners: owners,
            unboundOwners: unboundOwners
        )
    }

    /// The statement's text and how to bind it again; nil unless recording.
    public var template: StatementTemplate? {
        recording
            ? StatementTemplate(
                sql: finishedSQL, parameterTypes: allParameterTypes, namesCaller: namesCaller, replays: replays, ownerReplays: ownerReplays
            )
            : nil
    }
}
