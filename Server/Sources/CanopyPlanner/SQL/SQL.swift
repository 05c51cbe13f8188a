/// A piece of SQL text built only from what the source code spells: string
/// literals, other fragments, bind placeholders (``SQLBuilder/bind(_:)-swift.method``),
/// integers, quoted literals of checked names, and text explicitly marked
/// `unescaped:`. A `String` variable does not convert into one, so a value
/// from a client cannot compile into a statement: it must be bound. The
/// same idea as PostgresNIO's `PostgresQuery` interpolation.
public struct SQL: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringInterpolation {
    /// The text, for `SQLStatement` and tests.
    public private(set) var text: String

    public var description: String { text }

    public init(stringLiteral value: String) {
        text = value
    }

    public init(stringInterpolation: StringInterpolation) {
        text = stringInterpolation.text
    }

    /// Text the caller vouches for (an enum's raw value, a generated alias).
    /// Never a value from a client: bind those.
    public init(unescaped text: String) {
        self.text = text
    }

    /// A quoted SQL string literal (`'…'`, quotes doubled) of a name already
    /// checked against its grammar: needed where PostgreSQL wants a constant,
    /// as in an expression index (`canopy.string_field(fields, 'name')`).
    public static func literal(_ name: String) -> SQL {
        // Quotes doubled byte by byte (Foundation's replacingOccurrences was
        // 1.5% of a filtered W2 request).
        var text: [UInt8] = [UInt8(ascii: "'")]
        for byte in name.utf8 {
            text.append(byte)
            if byte == UInt8(ascii: "'") { text.append(byte) }
        }
        text.append(UInt8(ascii: "'"))
        return SQL(unescaped: String(decoding: text, as: UTF8.self))
    }

    public var isEmpty: Bool { text.isEmpty }

    public static func + (left: SQL, right: SQL) -> SQL {
        SQL(unescaped: left.text + right.text)
    }

    public static func += (left: inout SQL, right: SQL) {
        left.text += right.text
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 8 * interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            text += literal
        }

        public mutating func appendInterpolation(_ fragment: SQL) {
            text += fragment.text
        }

        public mutating func appendInterpolation(_ number: Int) {
            text += String(number)
        }

        /// Text the caller vouches for; see ``SQL/init(unescaped:)``.
        public mutating func appendInterpolation(unescaped raw: String) {
            text += raw
        }
    }
}

extension Sequence where Element == SQL {
    public func joined(separator: SQL) -> SQL {
        SQL(unescaped: map(\.text).joined(separator: separator.text))
    }
}
