import PostgresNIO

/// Builds one statement: SQL text made only of ``SQL`` fragments, and every
/// value from a client appended as a bind parameter (`$n`), never into the
/// text.
public struct SQLBuilder: Sendable {
    public private(set) var sql = ""
    public private(set) var binds = PostgresBindings()
    /// The declared type of each bind, so the statement can be prepared.
    public private(set) var parameterTypes: [PostgresDataType] = []

    private var aliases = 0

    public init() {}

    /// A table alias not used before in this statement, for subqueries
    /// that may nest (a share's zone's share).
    public mutating func alias(_ base: StaticString) -> SQL {
        aliases += 1
        return SQL(unescaped: "\(base)\(aliases)")
    }

    public mutating func append(_ fragment: SQL) {
        sql += fragment.text
    }

    /// Binds a value; returns its placeholder.
    public mutating func bind<Value: PostgresNonThrowingEncodable>(_ value: Value) -> SQL {
        binds.append(value)
        parameterTypes.append(Value.psqlType)
        return "$\(binds.count)"
    }

    /// Binds an optional value (NULL when nil); returns its placeholder.
    public mutating func bind<Value: PostgresNonThrowingEncodable>(_ value: Value?) -> SQL {
        binds.append(value)
        parameterTypes.append(Value.psqlType)
        return "$\(binds.count)"
    }

    /// Binds a JSON value (sent as text, cast to jsonb).
    public mutating func bind(json value: JSONValue) -> SQL {
        "(\(bind(value.jsonText))::text)::jsonb"
    }

    /// Binds a response key (always text).
    public mutating func key(_ name: String) -> SQL {
        "\(bind(name))::text"
    }

    public var query: SQLStatement {
        SQLStatement(sql: sql, binds: binds, parameterTypes: parameterTypes)
    }
}
