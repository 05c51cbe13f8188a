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

    /// The text with the caller's parameter numbered: the one after the binds.
    private var finishedSQL: String {
        namesCaller ? sql.replacingOccurrences(of: Self.callerMarker, with: "$\(binds.count + 1)") : sql
    }

    public var query: SQLStatement {
        SQLStatement(sql: finishedSQL, binds: binds, parameterTypes: parameterTypes, namesCaller: namesCaller, owners: owners)
    }

    /// The statement's text and how to bind it again; nil unless recording.
    public var template: StatementTemplate? {
        recording ? StatementTemplate(sql: finishedSQL, parameterTypes: parameterTypes, namesCaller: namesCaller, replays: replays) : nil
    }
}
