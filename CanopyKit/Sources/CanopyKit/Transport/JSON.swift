import Foundation

/// JSON as the gateway speaks it. Numbers keep their integer-ness (`5` is
/// INT64, `5.0` DOUBLE, docs/API.md §4), which `JSONSerialization` and `Codable`
/// lose, so CanopyKit reads and writes JSON text itself.
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    var double: Double? {
        switch self {
        case .double(let value): return value
        case .int(let value): return Double(value)
        default: return nil
        }
    }

    var int: Int64? {
        if case .int(let value) = self { return value }
        return nil
    }

    var array: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    var object: [String: JSON]? {
        if case .object(let value) = self { return value }
        return nil
    }

    var isNull: Bool { self == .null }
}

// MARK: - Writing

extension JSON {
    /// Compact JSON text.
    var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value):
            // Swift's description is the shortest text that reads back the
            // same; a double keeps a "." or an exponent so it stays DOUBLE.
            let text = value.isFinite ? "\(value)" : "null"
            out += text
            if value.isFinite, !text.contains("."), !text.contains("e") { out += ".0" }
        case .string(let value): JSON.writeString(value, into: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                JSON.writeString(key, into: &out)
                out += ":"
                members[key]!.write(into: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ value: String, into out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

// MARK: - Reading

extension JSON {
    /// Reads JSON text; nesting is bounded so a hostile answer cannot
    /// exhaust the stack.
    init(parsing data: Data) throws {
        var reader = Reader(bytes: [UInt8](data))
        reader.skipSpace()
        self = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.atEnd else { throw reader.failure("text after the value") }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0
        static let maximumDepth = 256

        var atEnd: Bool { index >= bytes.count }

        func failure(_ what: String) -> CanopyError {
            CanopyError(.internalError, "the server's answer is not JSON: \(what) at byte \(index)")
        }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ literal: String, _ value: JSON) throws -> JSON {
            let expected = Array(literal.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw failure("expected \(literal)")
            }
            index += expected.count
            return value
        }

        mutating func value(depth: Int) throws -> JSON {
            guard depth < Self.maximumDepth else { throw failure("nesting deeper than \(Self.maximumDepth)") }
            guard !atEnd else { throw failure("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "n"): return try expect("null", .null)
            case UInt8(ascii: "t"): return try expect("true", .bool(true))
            case UInt8(ascii: "f"): return try expect("false", .bool(false))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                index += 1
                var values: [JSON] = []
                skipSpace()
                if !atEnd, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
                while true {
                    skipSpace()
                    values.append(try value(depth: depth + 1))
                    skipSpace()
                    guard !atEnd else { throw failure("unterminated list") }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
                    throw failure("expected , or ]")
                }
            case UInt8(ascii: "{"):
                index += 1
                var members: [String: JSON] = [:]
                skipSpace()
                if !atEnd, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard !atEnd, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
                    let key = try string()
                    skipSpace()
                    guard !atEnd, bytes[index] == UInt8(ascii: ":") else { throw failure("expected :") }
                    index += 1
                    skipSpace()
                    members[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard !atEnd else { throw failure("unterminated object") }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                    throw failure("expected , or }")
                }
            default:
                return try number()
            }
        }

        mutating func number() throws -> JSON {
            let start = index
            var isInteger = true
            while index < bytes.count {
                let byte = bytes[index]
                if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") {
                    index += 1
                } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    isInteger = false
                    index += 1
                } else {
                    break
                }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let value = Int64(text) { return .int(value) }
            guard let value = Double(text) else { throw failure("bad number \(text)") }
            return .double(value)
        }

        mutating func string() throws -> String {
            index += 1  // the opening quote
            var scalars = String.UnicodeScalarView()
            var run = index
            func flush(_ bytes: [UInt8], _ from: Int, _ to: Int, _ scalars: inout String.UnicodeScalarView) {
                if to > from { scalars.append(contentsOf: String(decoding: bytes[from..<to], as: UTF8.self).unicodeScalars) }
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    flush(bytes, run, index, &scalars)
                    index += 1
                    return String(scalars)
                }
                if byte == UInt8(ascii: "\\") {
                    flush(bytes, run, index, &scalars)
                    index += 1
                    guard index < bytes.count else { break }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count,
                           bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                            index += 2
                            let low = try hex4()
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                    default: scalars.append(Unicode.Scalar(escape))
                    }
                    run = index
                    continue
                }
                index += 1
            }
            throw failure("unterminated string")
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                throw failure("bad \\u escape")
            }
            index += 4
            return value
        }
    }
}
