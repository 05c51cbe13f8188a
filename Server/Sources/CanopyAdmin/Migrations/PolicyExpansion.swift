import CanopyRequestStore

/// Where a row-level security policy's text differs by engine: the one
/// switch of DECISIONS 151 and 158, so `sql/policies` stays one copy.
///
/// Citus refuses a policy that holds a subquery, even the
/// `(SELECT canopy.current_user_id())` wrapper that makes one PostgreSQL
/// evaluate a function once per statement. So, in each `CREATE POLICY`
/// statement, and only on Citus:
///
/// 1. a span written `/*@citus EXPR*/ … /*@end*/` becomes `EXPR` (the
///    membership probes: an `EXISTS` on one PostgreSQL, a cached probe
///    function on Citus);
/// 2. then every `(SELECT canopy.f(…))` becomes `canopy.f(…)`.
///
/// On one PostgreSQL the text is not touched: the markers are comments,
/// which PostgreSQL drops when it stores a policy, so the stored policies
/// are those of a file without them.
public enum PolicyExpansion {
    /// The script `source` (the file at `path`, named in errors) as it runs
    /// on `engine`.
    public static func text(_ source: String, for engine: DatabaseEngine, path: String) throws -> String {
        guard engine == .citus else { return source }
        var result = ""
        var rest = Substring(source)
        for statement in SQLScript(source).statements where isPolicy(statement.text) {
            guard let range = rest.range(of: statement.text) else { continue }
            result += rest[..<range.lowerBound]
            result += try expand(statement.text, path: path, line: statement.line)
            rest = rest[range.upperBound...]
        }
        return result + rest
    }

    /// One `CREATE POLICY` statement as Citus runs it.
    static func expand(_ statement: String, path: String, line: Int) throws -> String {
        unwrapSelects(try replaceMarkers(statement, path: path, line: line))
    }

    /// The subqueries left in a statement: each `(SELECT` outside comments
    /// and quotes (not `FOR SELECT`), with the text that follows it (for
    /// messages and tests).
    public static func subqueries(in statement: String) -> [String] {
        let chars = Array(statement)
        var found: [String] = []
        for index in codePositions(chars) where chars[index] == "(" {
            let word = skipSpace(chars, from: index + 1)
            if matchesWord(chars, at: word, "SELECT") {
                found.append(String(chars[index..<min(chars.count, index + 60)]))
            }
        }
        return found
    }

    static func isPolicy(_ statement: String) -> Bool {
        statement.prefix(13).uppercased() == "CREATE POLICY"
    }

    // MARK: - Markers

    static let markerStart = "/*@citus "
    static let markerEnd = "/*@end*/"

    static func replaceMarkers(_ statement: String, path: String, line: Int) throws -> String {
        var result = ""
        var rest = Substring(statement)
        while let start = rest.range(of: markerStart) {
            guard let close = rest[start.upperBound...].range(of: "*/"),
                  let end = rest[close.upperBound...].range(of: markerEnd)
            else {
                throw StoreError(.invalidInput, "\(path) line \(line): a \(markerStart.trimmingCharacters(in: .whitespaces))…*/ marker without its \(markerEnd)")
            }
            let replacement = rest[start.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
            guard !replacement.isEmpty, !rest[close.upperBound..<end.lowerBound].contains("/*@citus") else {
                throw StoreError(.invalidInput, "\(path) line \(line): a \(markerStart.trimmingCharacters(in: .whitespaces)) marker must name an expression and cannot hold another")
            }
            result += rest[..<start.lowerBound]
            result += replacement
            rest = rest[end.upperBound...]
        }
        return result + rest
    }

    // MARK: - (SELECT canopy.f(…))

    /// Replaces `(SELECT canopy.f(args))` by `canopy.f(args)` until none is
    /// left; anything else that starts with `(SELECT` is left as it is.
    static func unwrapSelects(_ statement: String) -> String {
        var chars = Array(statement)
        var changed = true
        while changed {
            changed = false
            for index in codePositions(chars) where chars[index] == "(" {
                guard let (callStart, callEnd, end) = wrappedCall(chars, at: index) else { continue }
                chars.replaceSubrange(index..<end, with: chars[callStart..<callEnd])
                changed = true
                break
            }
        }
        return String(chars)
    }

    /// At `(SELECT canopy.name(…))`: the range of `canopy.name(…)` and the
    /// index just past the wrapper's closing parenthesis.
    static func wrappedCall(_ chars: [Character], at index: Int) -> (Int, Int, Int)? {
        var position = skipSpace(chars, from: index + 1)
        guard matchesWord(chars, at: position, "SELECT") else { return nil }
        position = skipSpace(chars, from: position + 6)
        let callStart = position
        let prefix = Array("canopy.")
        guard position + prefix.count <= chars.count, Array(chars[position..<position + prefix.count]) == prefix else { return nil }
        position += prefix.count
        let nameStart = position
        while position < chars.count, chars[position].isLetter || chars[position].isNumber || chars[position] == "_" {
            position += 1
        }
        guard position > nameStart, position < chars.count, chars[position] == "(",
              let argumentsEnd = matchingParenthesis(chars, at: position)
        else { return nil }
        let callEnd = argumentsEnd + 1
        let close = skipSpace(chars, from: callEnd)
        guard close < chars.count, chars[close] == ")" else { return nil }
        return (callStart, callEnd, close + 1)
    }

    // MARK: - Lexing

    /// The indexes of `chars` that are code: not in a comment, a quoted
    /// string or a quoted identifier.
    static func codePositions(_ chars: [Character]) -> [Int] {
        var positions: [Int] = []
        var index = 0
        while index < chars.count {
            let character = chars[index]
            if character == "-", index + 1 < chars.count, chars[index + 1] == "-" {
                while index < chars.count, chars[index] != "\n" { index += 1 }
            } else if character == "/", index + 1 < chars.count, chars[index + 1] == "*" {
                var depth = 0
                repeat {
                    if chars[index] == "/", index + 1 < chars.count, chars[index + 1] == "*" { depth += 1; index += 2 }
                    else if chars[index] == "*", index + 1 < chars.count, chars[index + 1] == "/" { depth -= 1; index += 2 }
                    else { index += 1 }
                } while depth > 0 && index < chars.count
            } else if character == "'" || character == "\"" {
                index = closingQuote(chars, at: index) + 1
            } else {
                positions.append(index)
                index += 1
            }
        }
        return positions
    }

    /// The index of the `)` that closes the `(` at `open`, skipping quoted
    /// text; nil when it is not closed.
    static func matchingParenthesis(_ chars: [Character], at open: Int) -> Int? {
        var depth = 0
        var index = open
        while index < chars.count {
            switch chars[index] {
            case "'", "\"":
                index = closingQuote(chars, at: index)
            case "(":
                depth += 1
            case ")":
                depth -= 1
                if depth == 0 { return index }
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// The index of the quote that closes the one at `open` (a doubled
    /// quote is part of the text), or the end of `chars`.
    static func closingQuote(_ chars: [Character], at open: Int) -> Int {
        let quote = chars[open]
        var index = open + 1
        while index < chars.count {
            if chars[index] == quote {
                if index + 1 < chars.count, chars[index + 1] == quote { index += 2; continue }
                return index
            }
            index += 1
        }
        return chars.count
    }

    static func skipSpace(_ chars: [Character], from index: Int) -> Int {
        var index = index
        while index < chars.count, chars[index].isWhitespace { index += 1 }
        return index
    }

    /// Whether `word` starts at `index` (any case) as a whole word.
    static func matchesWord(_ chars: [Character], at index: Int, _ word: String) -> Bool {
        let letters = Array(word)
        guard index + letters.count <= chars.count else { return false }
        for (offset, letter) in letters.enumerated() where chars[index + offset].uppercased() != String(letter) {
            return false
        }
        func isWordCharacter(_ character: Character) -> Bool { character.isLetter || character.isNumber || character == "_" }
        if index > 0, isWordCharacter(chars[index - 1]) { return false }
        if index + letters.count < chars.count, isWordCharacter(chars[index + letters.count]) { return false }
        return true
    }
}

extension RepeatableFile {
    /// This file as it runs on `engine` (``PolicyExpansion``): itself on one
    /// PostgreSQL; on Citus, its policies expanded, with the checksum of
    /// that text, so a database that becomes a Citus coordinator applies
    /// the file again.
    public func expanded(for engine: DatabaseEngine) throws -> RepeatableFile {
        guard engine == .citus else { return self }
        let text = try PolicyExpansion.text(self.text, for: engine, path: "sql/\(path)")
        return text == self.text ? self : RepeatableFile(path: path, text: text)
    }
}
