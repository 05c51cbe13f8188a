import Synchronization

/// A hand-written recursive-descent parser for the grammar of docs/API.md §5.
/// Keywords are case-insensitive; every error names the column.
public struct PredicateParser {
    private var tokens: [PredicateToken]
    private var index = 0
    private var positionalCount = 0
    private var depth = 0
    private var comparisons = 0

    /// How deep NOT, parentheses and lists may nest, and how many
    /// comparisons one filter may hold: the parser, the checker and the SQL
    /// writer recurse, and a filter from a client must not exhaust the stack
    /// (found by fuzzing: 2,000 `{` overflowed it). CloudKit documents no bound; 256 comparisons is far more than a query needs.
    public static let maximumDepth = 32
    public static let maximumComparisons = 256

    /// Filters parsed before, by text: a client sends the same few filters
    /// with new values (issue 51). Bounded: emptied when full. Refusals are
    /// parsed again (their error is the answer either way).
    private static let parsed = Mutex<[String: PredicateSyntax]>([:])
    static let parsedCapacity = 1024

    public static func parse(_ text: String) throws -> PredicateSyntax {
        if let known = parsed.withLock({ $0[text] }) { return known }
        let predicate = try parseAnew(text)
        parsed.withLock { cache in
            if cache.count >= parsedCapacity { cache.removeAll(keepingCapacity: true) }
            cache[text] = predicate
        }
        return predicate
    }

    static func parseAnew(_ text: String) throws -> PredicateSyntax {
        var parser = PredicateParser(tokens: try PredicateLexer(text).tokens())
        let predicate = try parser.parseOr()
        guard case .end = parser.current.kind else {
            throw parser.error("expected AND, OR or the end of the filter, found \(parser.describe(parser.current))")
        }
        return predicate
    }

    private init(tokens: [PredicateToken]) {
        self.tokens = tokens
    }

    private var current: PredicateToken { tokens[index] }

    private func error(_ message: String, at column: Int? = nil) -> QueryError {
        QueryError(.invalidArguments, "filter, column \(column ?? current.column): \(message)")
    }

    private func describe(_ token: PredicateToken) -> String {
        switch token.kind {
        case .identifier(let word): return "'\(word)'"
        case .string(let text): return "the string '\(text)'"
        case .number(let text): return "the number \(text)"
        case .op(let op): return "'\(op)'"
        case .placeholder(let name): return "$\(name)"
        case .positional: return "%@"
        case .leftParen: return "'('"
        case .rightParen: return "')'"
        case .leftBrace: return "'{'"
        case .rightBrace: return "'}'"
        case .comma: return "','"
        case .end: return "the end of the filter"
        }
    }

    private func isKeyword(_ word: String) -> Bool {
        if case .identifier(let text) = current.kind { return text.uppercased() == word }
        return false
    }

    private mutating func expect(_ kind: PredicateToken.Kind, _ what: String) throws {
        guard current.kind == kind else { throw error("expected \(what), found \(describe(current))") }
        index += 1
    }

    private mutating func parseOr() throws -> PredicateSyntax {
        var left = try parseAnd()
        while isKeyword("OR") {
            index += 1
            left = .or(left, try parseAnd())
        }
        return left
    }

    private mutating func parseAnd() throws -> PredicateSyntax {
        var left = try parseUnary()
        while isKeyword("AND") {
            index += 1
            left = .and(left, try parseUnary())
        }
        return left
    }

    /// Counts one level of nesting for the duration of a nested parse.
    private mutating func enter() throws {
        depth += 1
        if depth > Self.maximumDepth {
            throw error("the filter nests NOT, parentheses and lists more than \(Self.maximumDepth) deep")
        }
    }

    private mutating func parseUnary() throws -> PredicateSyntax {
        if isKeyword("NOT") {
            index += 1
            try enter()
            defer { depth -= 1 }
            return .not(try parseUnary())
        }
        if current.kind == .leftParen {
            index += 1
            try enter()
            defer { depth -= 1 }
            let inner = try parseOr()
            try expect(.rightParen, "')'")
            return inner
        }
        if isKeyword("TRUEPREDICATE") {
            index += 1
            return .all
        }
        return .test(try parseComparison())
    }

    private mutating func parseComparison() throws -> PredicateSyntax.TestSyntax {
        comparisons += 1
        if comparisons > Self.maximumComparisons {
            throw error("the filter holds more than \(Self.maximumComparisons) comparisons")
        }
        guard case .identifier(let word) = current.kind else {
            throw error("expected a field name, found \(describe(current))")
        }
        let keyColumn = current.column
        index += 1
        if word.lowercased() == "distancetolocation:fromlocation:" {
            try expect(.leftParen, "'(' after distanceToLocation:fromLocation:")
            guard case .identifier(let key) = current.kind else { throw error("expected a LOCATION field name") }
            let column = current.column
            index += 1
            try expect(.comma, "','")
            let location = try parseValue()
            try expect(.rightParen, "')'")
            guard case .op(let op) = current.kind, op == "<" || op == "<=" else {
                throw error("distanceToLocation:fromLocation:(...) is compared with < or <= a distance in kilometres")
            }
            index += 1
            let kilometres = try parseValue()
            return .init(key: key, keyColumn: column, kind: .distance(location: location, op: op, kilometres: kilometres))
        }
        // `ANY tags BEGINSWITH "x"` (NSPredicate's, as CloudKit's
        // LIST_MEMBER_BEGINS_WITH): ANY followed by a field name rather than
        // an operator (a field may itself be called any).
        if word.uppercased() == "ANY", case .identifier(let key) = current.kind,
           !["BETWEEN", "IN", "CONTAINS", "BEGINSWITH"].contains(key.uppercased()) {
            let column = current.column
            guard Self.isFieldName(key) else { throw error("'\(key)' is not a field name", at: column) }
            index += 1
            guard case .identifier(let keyword) = current.kind, keyword.uppercased() == "BEGINSWITH" else {
                throw error("ANY \(key) is followed by BEGINSWITH, found \(describe(current))")
            }
            index += 1
            return .init(key: key, keyColumn: column, kind: .anyBeginsWith(try parseValue()))
        }
        guard Self.isFieldName(word) else {
            throw error("'\(word)' is not a field name", at: keyColumn)
        }
        if case .op(let op) = current.kind {
            index += 1
            return .init(key: word, keyColumn: keyColumn, kind: .compare(op, try parseValue()))
        }
        guard case .identifier(let keyword) = current.kind else {
            throw error("expected an operator after \(word), found \(describe(current))")
        }
        switch keyword.uppercased() {
        case "BETWEEN":
            index += 1
            try expect(.leftBrace, "'{' after BETWEEN")
            let low = try parseValue()
            try expect(.comma, "','")
            let high = try parseValue()
            try expect(.rightBrace, "'}'")
            return .init(key: word, keyColumn: keyColumn, kind: .between(low, high))
        case "IN":
            index += 1
            if current.kind == .leftBrace || current.kind == .leftParen {
                return .init(key: word, keyColumn: keyColumn, kind: .in(try parseList()))
            }
            let value = try parseValue()
            switch value {
            case .named, .positional: return .init(key: word, keyColumn: keyColumn, kind: .in(value))
            default: throw error("IN takes a list {a, b} or a placeholder", at: value.column)
            }
        case "CONTAINS":
            index += 1
            let value = try parseValue()
            if word == "self" { return .init(key: word, keyColumn: keyColumn, kind: .selfContains(value)) }
            return .init(key: word, keyColumn: keyColumn, kind: .contains(value))
        case "BEGINSWITH":
            index += 1
            return .init(key: word, keyColumn: keyColumn, kind: .beginsWith(try parseValue()))
        default:
            throw error("expected an operator after \(word), found \(describe(current))")
        }
    }

    private mutating func parseList() throws -> PredicateSyntax.OperandSyntax {
        let column = current.column
        let closing: PredicateToken.Kind = current.kind == .leftBrace ? .rightBrace : .rightParen
        index += 1
        try enter()
        defer { depth -= 1 }
        var items: [PredicateSyntax.OperandSyntax] = []
        if current.kind != closing {
            items.append(try parseValue())
            while current.kind == .comma {
                index += 1
                items.append(try parseValue())
            }
        }
        try expect(closing, closing == .rightBrace ? "'}'" : "')'")
        return .list(items, column: column)
    }

    private mutating func parseValue() throws -> PredicateSyntax.OperandSyntax {
        let token = current
        switch token.kind {
        case .string(let text):
            index += 1
            return .literal(.string(text), column: token.column)
        case .number(let text):
            index += 1
            if let integer = Int64(text) { return .literal(.int(integer), column: token.column) }
            return .literal(.double(Double(text)!), column: token.column)
        case .placeholder(let name):
            index += 1
            return .named(name, column: token.column)
        case .positional:
            index += 1
            positionalCount += 1
            return .positional(positionalCount - 1, column: token.column)
        case .leftBrace:
            return try parseList()
        case .identifier(let word):
            switch word.uppercased() {
            case "TRUE", "YES": index += 1; return .literal(.bool(true), column: token.column)
            case "FALSE", "NO": index += 1; return .literal(.bool(false), column: token.column)
            case "NIL", "NULL": index += 1; return .null(column: token.column)
            default: throw error("expected a value, found '\(word)' (quote strings: '\(word)')")
            }
        default:
            throw error("expected a value, found \(describe(token))")
        }
    }

    /// `[A-Za-z][A-Za-z0-9_]*`, byte by byte (a regular expression here was
    /// 4% of a filtered W2 request).
    static func isFieldName(_ word: String) -> Bool {
        var bytes = word.utf8.makeIterator()
        guard let first = bytes.next(), (first | 0x20) >= UInt8(ascii: "a"), (first | 0x20) <= UInt8(ascii: "z") else { return false }
        while let byte = bytes.next() {
            let letter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            let digit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            guard letter || digit || byte == UInt8(ascii: "_") else { return false }
        }
        return true
    }
}
