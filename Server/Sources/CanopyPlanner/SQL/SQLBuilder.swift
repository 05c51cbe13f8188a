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

    public var query: SQLStatement {
        SQLStatement(sql: sql, binds: binds, parameterTypes: parameterTypes)
    }

    /// The statement's text and how to bind it again; nil unless recording.
    public var template: StatementTemplate? {
        recording ? StatementTemplate(sql: sql, parameterTypes: parameterTypes, replays: replays) : nil
    }
}
