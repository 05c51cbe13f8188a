/// Splits a schema file into words, quoted names and punctuation, each with
/// its line and column, skipping `//`, `--` and `/* */` comments.
struct RecordTypesLexer {
    enum Kind: Equatable {
        /// A bare word: a keyword or an unquoted name.
        case word(String)
        /// A double-quoted name or role (`"___recordID"`, `"_world"`).
        case quoted(String)
        case symbol(Character)
        case end
    }

    struct Token: Equatable {
        var kind: Kind
        var location: QueryError.Location

        var text: String {
            switch kind {
            case .word(let word): return word
            case .quoted(let name): return "\"\(name)\""
            case .symbol(let symbol): return String(symbol)
            case .end: return "the end of the file"
            }
        }
    }

    static func tokens(_ source: String) throws -> [Token] {
        var tokens: [Token] = []
        let characters = Array(source)
        var index = 0
        var line = 1
        var column = 1

        func advance() {
            if characters[index] == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
            index += 1
        }
        func peek(_ offset: Int = 0) -> Character? {
            index + offset < characters.count ? characters[index + offset] : nil
        }

        while let character = peek() {
            let location = QueryError.Location(line: line, column: column)
            if character.isWhitespace {
                advance()
            } else if (character == "/" && peek(1) == "/") || (character == "-" && peek(1) == "-") {
                while let next = peek(), next != "\n" { advance() }
            } else if character == "/" && peek(1) == "*" {
                advance()
                advance()
                while peek() != nil && !(peek() == "*" && peek(1) == "/") { advance() }
                guard peek() != nil else { throw RecordTypesParser.error(location, "this comment is never closed (*/)") }
                advance()
                advance()
            } else if character == "\"" {
                advance()
                var name = ""
                while let next = peek(), next != "\"" {
                    guard next != "\n" else { throw RecordTypesParser.error(location, "this quoted name is never closed (\")") }
                    name.append(next)
                    advance()
                }
                guard peek() != nil else { throw RecordTypesParser.error(location, "this quoted name is never closed (\")") }
                advance()
                tokens.append(Token(kind: .quoted(name), location: location))
            } else if character.isLetter || character == "_" || character.isNumber {
                var word = ""
                while let next = peek(), next.isLetter || next.isNumber || next == "_" {
                    word.append(next)
                    advance()
                }
                tokens.append(Token(kind: .word(word), location: location))
            } else if "(),;<>".contains(character) {
                advance()
                tokens.append(Token(kind: .symbol(character), location: location))
            } else {
                throw RecordTypesParser.error(location, "unexpected character '\(character)'")
            }
        }
        tokens.append(Token(kind: .end, location: QueryError.Location(line: line, column: column)))
        return tokens
    }
}
