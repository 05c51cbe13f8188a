import Foundation
import PostgresNIO

/// A value that can be a bind parameter, with the SQL type it is sent as
/// (so a statement can one day be prepared per shape with exact types).
public protocol SQLParameter: PostgresNonThrowingEncodable {
    static var sqlTypeName: String { get }
}

extension String: SQLParameter {
    public static var sqlTypeName: String { "text" }
}
extension Int: SQLParameter {
    public static var sqlTypeName: String { "int8" }
}
extension Int64: SQLParameter {
    public static var sqlTypeName: String { "int8" }
}
extension Double: SQLParameter {
    public static var sqlTypeName: String { "float8" }
}
extension Bool: SQLParameter {
    public static var sqlTypeName: String { "bool" }
}
extension Array: SQLParameter where Element: SQLParameter & PostgresArrayEncodable {
    public static var sqlTypeName: String { Element.sqlTypeName + "[]" }
}

/// One statement: SQL text, its bind parameters and their SQL types (the
/// same text for the same document shape, ready to be prepared by shape).
public struct SQLStatement: Sendable {
    public var sql: String
    public var binds: PostgresBindings
    public var parameterTypes: [String]

    public var query: PostgresQuery {
        PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}

/// Builds one statement: SQL text written by the compiler, and every value
/// from a client appended as a bind parameter (`$n`), never into the text.
public struct SQLBuilder: Sendable {
    public private(set) var sql = ""
    public private(set) var binds = PostgresBindings()
    public private(set) var parameterTypes: [String] = []

    public init() {}

    public mutating func append(_ text: String) {
        sql += text
    }

    /// Binds a value; returns its placeholder.
    public mutating func bind<Value: SQLParameter>(_ value: Value) -> String {
        binds.append(value)
        parameterTypes.append(Value.sqlTypeName)
        return "$\(binds.count)"
    }

    /// Binds an optional value (NULL when nil); returns its placeholder.
    public mutating func bind<Value: SQLParameter>(_ value: Value?) -> String {
        binds.append(value)
        parameterTypes.append(Value.sqlTypeName)
        return "$\(binds.count)"
    }

    /// Binds a JSON value (sent as text, cast to jsonb: the parameter itself
    /// stays text, also in a prepared statement).
    public mutating func bind(json value: JSONValue) -> String {
        "(\(bind(value.jsonText))::text)::jsonb"
    }

    /// Binds a response key (always text).
    public mutating func key(_ name: String) -> String {
        "\(bind(name))::text"
    }

    public var statement: SQLStatement {
        SQLStatement(sql: sql, binds: binds, parameterTypes: parameterTypes)
    }

    public var query: PostgresQuery {
        PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}
