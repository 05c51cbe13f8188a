import CanopyEncoding

/// Writes a ``JSONValue`` as compact JSON text with its keys sorted, so
/// the same value always reads the same (cursor fingerprints, tests).
/// Written by hand, not with `JSONEncoder`: every record of a batch is
/// written once for its size check and once as the statement's parameter.
///
/// Strings are escaped as `JSONEncoder` escapes them (``JSONString``). A double
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
        JSONString.append(string, to: &text)
    }
}
