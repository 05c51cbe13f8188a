import CanopyEncoding

/// Writes a ``JSONValue`` as compact JSON text with its keys sorted, so
/// the same value always reads the same (cursor fingerprints, tests).
/// Written by hand, not with `JSONEncoder`: every record of a batch is
/// written as the statement's parameter (and measured first by ``sizeBound(of:)``).
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
            // Sorted with their values: no second lookup of each key.
            for (position, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if position > 0 { text += "," }
                write(member.key)
                text += ":"
                write(member.value)
            }
            text += "}"
        }
    }

    /// The most bytes `write` could make of `value`, without writing it: a
    /// string's every byte escaped (`\u00XX`, 6 bytes), a number's longest
    /// form. A batch's size checks (1 MB of fields a record) compare this
    /// first and write only a value this does not already clear (issue 39:
    /// every record was written twice, once only to be measured).
    static func sizeBound(of value: JSONValue) -> Int {
        switch value {
        case .null, .bool: return 5
        case .int, .double: return 40
        case .string(let string): return string.utf8.count * 6 + 2
        case .array(let elements): return elements.reduce(2) { $0 + sizeBound(of: $1) + 1 }
        case .object(let members): return members.reduce(2) { $0 + $1.key.utf8.count * 6 + 3 + sizeBound(of: $1.value) + 1 }
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
