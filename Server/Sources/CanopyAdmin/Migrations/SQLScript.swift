/// A SQL file cut into statements, each with the line it starts on, so that
/// a failing migration can be reported by file and line. Knows enough SQL
/// lexing to not cut inside quotes, comments or dollar-quoted bodies.
public struct SQLScript: Sendable {
    public struct Statement: Sendable, Equatable {
        /// The statement's text, without the terminating semicolon.
        public var text: String
        /// 1-based line of the file where `text` starts.
        public var line: Int
    }

    public let statements: [Statement]

    public init(_ source: String) {
        var statements: [Statement] = []
        let chars = Array(source)
        var index = 0
        var line = 1
        var current = ""
        var currentLine = 1
        var hasCode = false

        func peek(_ offset: Int) -> Character? {
            index + offset < chars.count ? chars[index + offset] : nil
        }
        func take() {
            let character = chars[index]
            if character == "\n" { line += 1 }
            current.append(character)
            index += 1
        }
        func startCode() {
            if !hasCode {
                hasCode = true
                currentLine = line
                current = ""
            }
        }

        while index < chars.count {
            let character = chars[index]
            if character == "-" && peek(1) == "-" {
                while index < chars.count && chars[index] != "\n" { take() }
            } else if character == "/" && peek(1) == "*" {
                var depth = 0
                repeat {
                    if chars[index] == "/" && peek(1) == "*" { depth += 1; take(); take() }
                    else if chars[index] == "*" && peek(1) == "/" { depth -= 1; take(); take() }
                    else { take() }
                } while depth > 0 && index < chars.count
            } else if character == "'" || character == "\"" {
                startCode()
                let escapes = character == "'" && index > 0 && (chars[index - 1] == "E" || chars[index - 1] == "e")
                take()
                while index < chars.count {
                    if escapes && chars[index] == "\\" && index + 1 < chars.count { take(); take(); continue }
                    if chars[index] == character {
                        if peek(1) == character { take(); take(); continue }
                        take()
                        break
                    }
                    take()
                }
            } else if character == "$", let tag = Self.dollarTag(chars, at: index) {
                startCode()
                for _ in 0..<tag.count { take() }
                while index < chars.count {
                    if chars[index] == "$" && Self.matches(chars, at: index, tag) {
                        for _ in 0..<tag.count { take() }
                        break
                    }
                    take()
                }
            } else if character == ";" {
                if hasCode {
                    statements.append(Statement(text: current.trimmingTrailingWhitespace(), line: currentLine))
                }
                hasCode = false
                current = ""
                index += 1
            } else if character.isWhitespace {
                take()
            } else {
                startCode()
                take()
            }
        }
        if hasCode {
            let text = current.trimmingTrailingWhitespace()
            if !text.isEmpty { statements.append(Statement(text: text, line: currentLine)) }
        }
        self.statements = statements
    }

    /// `$tag$` or `$$` starting at index, if that is what is there.
    static func dollarTag(_ chars: [Character], at index: Int) -> [Character]? {
        if index > 0, chars[index - 1].isLetter || chars[index - 1].isNumber || chars[index - 1] == "_" {
            return nil  // part of an identifier such as a$b, or a $1 parameter
        }
        var end = index + 1
        while end < chars.count, chars[end].isLetter || chars[end] == "_" || (end > index + 1 && chars[end].isNumber) {
            end += 1
        }
        guard end < chars.count, chars[end] == "$" else { return nil }
        return Array(chars[index...end])
    }

    static func matches(_ chars: [Character], at index: Int, _ tag: [Character]) -> Bool {
        guard index + tag.count <= chars.count else { return false }
        for offset in 0..<tag.count where chars[index + offset] != tag[offset] { return false }
        return true
    }
}

extension String {
    fileprivate func trimmingTrailingWhitespace() -> String {
        var copy = self
        while let last = copy.last, last.isWhitespace { copy.removeLast() }
        return copy
    }
}
