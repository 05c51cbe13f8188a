import Foundation
import PostgresNIO

/// A value that can be a bind parameter, with the SQL type it is sent as
/// (so a statement can be prepared once per shape with exact parameter types).
public protocol SQLParameter: PostgresNonThrowingEncodable {
    static var sqlTypeName: String { get }
    static var dataType: PostgresDataType { get }
    /// The value as a prepared statement's execution takes it.
    var postgresData: PostgresData { get }
}

extension String: SQLParameter {
    public static var sqlTypeName: String { "text" }
    public static var dataType: PostgresDataType { .text }
    public var postgresData: PostgresData { PostgresData(string: self) }
}
extension Int: SQLParameter {
    public static var sqlTypeName: String { "int8" }
    public static var dataType: PostgresDataType { .int8 }
    public var postgresData: PostgresData { PostgresData(int64: Int64(self)) }
}
extension Int64: SQLParameter {
    public static var sqlTypeName: String { "int8" }
    public static var dataType: PostgresDataType { .int8 }
    public var postgresData: PostgresData { PostgresData(int64: self) }
}
extension Double: SQLParameter {
    public static var sqlTypeName: String { "float8" }
    public static var dataType: PostgresDataType { .float8 }
    public var postgresData: PostgresData { PostgresData(double: self) }
}
extension Bool: SQLParameter {
    public static var sqlTypeName: String { "bool" }
    public static var dataType: PostgresDataType { .bool }
    public var postgresData: PostgresData { PostgresData(bool: self) }
}
extension Array: SQLParameter where Element: SQLParameter & PostgresArrayEncodable {
    public static var sqlTypeName: String { Element.sqlTypeName + "[]" }
    public static var dataType: PostgresDataType {
        switch Element.dataType {
        case .text: return .textArray
        case .int8: return .int8Array
        case .float8: return .float8Array
        case .bool: return .boolArray
        default: return .null
        }
    }
    public var postgresData: PostgresData {
        PostgresData(array: map { Optional($0.postgresData) }, elementType: Element.dataType)
    }
}

/// One statement: SQL text, its bind parameters and their SQL types. Read
/// statements return text columns only, so a prepared execution's rows
/// decode the same whatever format they arrive in.
public struct SQLStatement: Sendable {
    public var sql: String
    public var binds: PostgresBindings
    public var parameterTypes: [String]
    /// The same values as `binds`, for executing a prepared statement.
    public var values: [PostgresData]

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
    public private(set) var values: [PostgresData] = []

    public init() {}

    public mutating func append(_ text: String) {
        sql += text
    }

    /// Binds a value; returns its placeholder.
    public mutating func bind<Value: SQLParameter>(_ value: Value) -> String {
        binds.append(value)
        parameterTypes.append(Value.sqlTypeName)
        values.append(value.postgresData)
        return "$\(binds.count)"
    }

    /// Binds an optional value (NULL when nil); returns its placeholder.
    public mutating func bind<Value: SQLParameter>(_ value: Value?) -> String {
        binds.append(value)
        parameterTypes.append(Value.sqlTypeName)
        values.append(value?.postgresData ?? PostgresData(type: Value.dataType, value: nil))
        return "$\(binds.count)"
    }

    /// Binds a JSON value (sent as text, cast to jsonb).
    public mutating func bind(json value: JSONValue) -> String {
        "\(bind(value.jsonText))::jsonb"
    }

    /// Binds a response key (always text).
    public mutating func key(_ name: String) -> String {
        "\(bind(name))::text"
    }

    public var statement: SQLStatement {
        SQLStatement(sql: sql, binds: binds, parameterTypes: parameterTypes, values: values)
    }

    public var query: PostgresQuery {
        PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}
