import Foundation

/// A JSON value as a client sent it: variables, `fields`, `args`. Numbers
/// keep their integer-ness, so the schema can tell INT64 from DOUBLE. Read
/// with ``init(parsing:)`` and written with ``jsonText``, not `Codable`
/// (whose decoder cannot tell `5.0` from `5`).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Compact JSON text, keys sorted (stable for caching and tests).
    public var jsonText: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.text
    }

    /// Appends ``jsonText`` to `text`, without a string of its own.
    public func appendJSON(to text: inout String) {
        var writer = JSONWriter()
        swap(&writer.text, &text)
        writer.write(self)
        swap(&writer.text, &text)
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A short name of the JSON type, for messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .array: return "a list"
        case .object: return "an object"
        }
    }
}
