/// Reads JSON text (RFC 8259) into a ``JSONValue`` in one pass over its
/// UTF-8 bytes. Request bodies are parsed here rather than by `JSONDecoder`,
/// whose `Codable` path guesses each value's type by trying them in turn:
/// for a batch of 400 records that guessing was most of the gateway's work.
///
/// A number written with a fraction or an exponent is `.double`; one
/// without is `.int` when it fits in 64 bits. Errors name the line and
/// column of the first byte that does not fit.
struct JSONParser {
    /// Deeper nesting is refused, so that no body can exhaust the stack.
    static let maximumDepth = 512

    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The whole text as one value, with nothing after it but whitespace.
    mutating func document() throws(QueryError) -> JSONValue {
        skipWhitespace()
        let value = try self.value()
        skipWhitespace()
        guard index == bytes.count else { throw failure("unexpected text after the JSON value") }
        return value
    }

    mutating func value() throws(QueryError) -> JSONValue {
        guard index < bytes.count else { throw failure("the JSON text ends where a value was expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("expected a JSON value")
        }
    }

    mutating func object() throws(QueryError) -> JSONValue {
        try enter()
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if next(is: "}") {
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a string key") }
            let key = try string()
            skipWhitespace()
            guard next(is: ":") else { throw failure("expected ':' after an object key") }
            skipWhitespace()
            members[key] = try value()
            skipWhitespace()
            if next(is: ",") { continue }
            guard next(is: "}") else { throw failure("expected ',' or '}' in an object") }
            depth -= 1
            return .object(members)
        }
    }

    mutating func array() throws(QueryError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if next(is: "]") {
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            if next(is: ",") { continue }
            guard next(is: "]") else { throw failure("expected ',' or ']' in a list") }
            depth -= 1
            return .array(elements)
        }
    }

    /// A string from its opening quote; the index ends after the closing one.
    mutating func string() throws(QueryError) -> String {
        index += 1
        let start = index
        // Most strings have no escapes: one scan, then one validation.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = try utf8String(UnsafeBufferPointer(rebasing: bytes[start..<index]), at: start)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("a control character must be escaped in a string") }
            index += 1
        }
        var unescaped = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let text = try unescaped.withUnsafeBufferPointer { buffer throws(QueryError) in try utf8String(buffer, at: start) }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { break }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): unescaped.append(escaped)
                case UInt8(ascii: "b"): unescaped.append(0x08)
                case UInt8(ascii: "f"): unescaped.append(0x0C)
                case UInt8(ascii: "n"): unescaped.append(0x0A)
                case UInt8(ascii: "r"): unescaped.append(0x0D)
                case UInt8(ascii: "t"): unescaped.append(0x09)
                case UInt8(ascii: "u"): unescaped.append(contentsOf: try unicodeEscape())
                default:
                    index -= 2
                    throw failure("unknown escape in a string")
                }
            default:
                if byte < 0x20 { throw failure("a control character must be escaped in a string") }
                unescaped.append(byte)
                index += 1
            }
        }
        throw failure("the JSON text ends inside a string")
    }

    /// The UTF-8 of a `\uXXXX` escape (the index just after the `u`),
    /// joining a surrogate pair written as two escapes.
    mutating func unicodeEscape() throws(QueryError) -> [UInt8] {
        let escapeStart = index - 2
        var scalar = try hexQuad()
        if (0xD800...0xDBFF).contains(scalar) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                index = escapeStart
                throw failure("a \\u escape holds half of a surrogate pair")
            }
            index += 2
            let low = try hexQuad()
            guard (0xDC00...0xDFFF).contains(low) else {
                index = escapeStart
                throw failure("a \\u escape holds half of a surrogate pair")
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            index = escapeStart
            throw failure("a \\u escape holds half of a surrogate pair")
        }
        return Array(String(Character(Unicode.Scalar(scalar)!)).utf8)
    }

    mutating func hexQuad() throws(QueryError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a \\u escape needs four hex digits")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    func utf8String(_ buffer: UnsafeBufferPointer<UInt8>, at start: Int) throws(QueryError) -> String {
        guard let text = String(validating: buffer, as: UTF8.self) else {
            var parser = self
            parser.index = start
            throw parser.failure("a string is not valid UTF-8")
        }
        return text
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    mutating func number() throws(QueryError) -> JSONValue {
        let start = index
        let negative = next(is: "-")
        var magnitude: UInt64 = 0
        var fitsInteger = true
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("expected a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) {
                throw failure("a number cannot start with 0 followed by digits")
            }
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                if overflow1 || overflow2 { fitsInteger = false }
                magnitude = sum
                index += 1
            }
        }
        var isInteger = true
        if next(is: ".") {
            isInteger = false
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("expected a digit after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("expected a digit in the exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger && fitsInteger {
            if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .int(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)) }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else {
            index = start
            throw failure("the number is out of range")
        }
        return .double(double)
    }

    func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    mutating func literal(_ word: StaticString) throws(QueryError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure("expected a JSON value") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure("expected a JSON value")
        }
        index += count
    }

    mutating func enter() throws(QueryError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw failure("the JSON nests deeper than \(Self.maximumDepth) levels") }
    }

    /// Consumes `character` if it is next.
    mutating func next(is character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
        index += 1
        return true
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// An error at the current byte: its line and column (in characters).
    func failure(_ problem: String) -> QueryError {
        var line = 1
        var column = 1
        for byte in bytes[..<min(index, bytes.count)] {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return QueryError(.badRequest, "\(problem) at line \(line), column \(column) of the JSON")
    }
}

extension JSONValue {
    /// Parses JSON text; a fault is `badRequest` naming its line and column.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(QueryError) {
        var parser = JSONParser(bytes.assumingMemoryBound(to: UInt8.self))
        self = try parser.document()
    }

    /// Parses JSON text; a fault is `badRequest` naming its line and column.
    public init(parsing text: String) throws(QueryError) {
        var text = text
        let result = text.withUTF8 { buffer in
            var parser = JSONParser(buffer)
            return Result { () throws(QueryError) in try parser.document() }
        }
        self = try result.get()
    }
}
