/// A URL's query string read as browsers and GraphQL clients write it for
/// GET (`application/x-www-form-urlencoded`): pairs split on `&`, `+` is a
/// space, and percent escapes are decoded once, after that.
struct FormEncodedQuery {
    private(set) var values: [String: String] = [:]

    /// Fails with the name of the parameter whose escapes are not valid
    /// (`%` not followed by two hex digits, or bytes that are not UTF-8).
    init(_ query: Substring) throws(QueryStringError) {
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let (rawName, rawValue) = pair.firstIndex(of: "=").map { (pair[..<$0], pair[pair.index(after: $0)...]) } ?? (pair, "")
            guard let name = Self.decode(rawName) else {
                throw QueryStringError(message: "a parameter name in the query string has an invalid percent escape")
            }
            guard let value = Self.decode(rawValue) else {
                throw QueryStringError(message: "the \(name) parameter has an invalid percent escape (% must be followed by two hex digits of UTF-8)")
            }
            // The first occurrence wins, as for a form.
            if values[name] == nil { values[name] = value }
        }
    }

    subscript(name: String) -> String? { values[name] }

    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

struct QueryStringError: Error {
    let message: String
}
