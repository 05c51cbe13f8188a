/// Writes a ``JSONValue`` as compact JSON text with its keys sorted, so
/// the same value always reads the same (cursor fingerprints, tests).
/// Written by hand, not with `JSONEncoder`: every record of a batch is
/// written once for its size check and once as the statement's parameter.
///
/// Strings are escaped as `JSONEncoder` escapes them (`\"`, `\\`, the short
/// escapes, `\u00XX` for other control characters; `/` as is). A double
/// keeps a fraction (`5.0`, `0.5`, `1e-07`), so PostgreSQL reads it as a
/// decimal, as the client wrote it. A whole double too large for Swift to
/// print without an exponent (`1e+20`) is written out in digits with `.0`
/// (`100000000000000000000.0`): PostgreSQL's numeric drops an exponent's
/// form, and a value read back without a fraction would be an INT64.
struct JSONWriter {
    var text = ""

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: text += "null"
        case .bool(let flag): text += flag ? "true" : "false"
        case .int(let number): text += String(number)
        case .double(let number): write(number)
        case .string(let string): write(string)
        case .array(let elements):
            text += "["
            for (position, element) in elements.enumerated() {
                if position > 0 { text += "," }
                write(element)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (position, key) in members.keys.sorted().enumerated() {
                if position > 0 { text += "," }
                write(key)
                text += ":"
                write(members[key]!)
            }
            text += "}"
        }
    }

    mutating func write(_ number: Double) {
        guard number.isFinite else { text += "null"; return }
        let shortest = number.description
        guard number == number.rounded(), let exponentMark = shortest.firstIndex(of: "e"),
              let exponent = Int(shortest[shortest.index(after: exponentMark)...]) else {
            text += shortest
            return
        }
        // `d.ddde+N`: the digits, then zeros up to N places after the first.
        let mantissa = shortest[..<exponentMark]
        let negative = mantissa.hasPrefix("-")
        let digits = mantissa.filter(\.isNumber)
        text += (negative ? "-" : "") + digits + String(repeating: "0", count: max(0, exponent + 1 - digits.count)) + ".0"
    }

    mutating func write(_ string: String) {
        text += "\""
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            text += string
        } else {
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case "\u{08}": text += "\\b"
                case "\u{0C}": text += "\\f"
                case let control where control.value < 0x20:
                    let hex = String(control.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
