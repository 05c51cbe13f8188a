/// Tokens of the predicate language (docs/API.md §5), each with its 1-based
/// column in the filter text, so every fault can say where it is.
struct PredicateToken: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        case identifier(String)
        case string(String)
        case number(String)
        case op(String)            // == = != <> < <= > >=
        case placeholder(String)   // $name
        case positional            // %@
        case leftParen, rightParen, leftBrace, rightBrace, comma
        case end
    }
    let kind: Kind
    let column: Int
}

/// Splits a filter into tokens; an unexpected character is an error at its column.
struct PredicateLexer {
    let characters: [Character]

    init(_ text: String) {
        characters = Array(text)
    }

    func tokens() throws -> [PredicateToken] {
        var tokens: [PredicateToken] = []
        var index = 0
        func fail(_ message: String, _ at: Int) -> QueryError {
            QueryError(.invalidArguments, "filter, column \(at + 1): \(message)")
        }
        while index < characters.count {
            let character = characters[index]
            let start = index
            if character.isWhitespace {
                index += 1
                continue
            }
            if character.isLetter || character == "_" {
                var word = ""
                while index < characters.count, characters[index].isLetter || characters[index].isNumber || characters[index] == "_" || characters[index] == ":" {
                    word.append(characters[index])
                    index += 1
                }
                tokens.append(.init(kind: .identifier(word), column: start + 1))
                continue
            }
            if character.isNumber || (character == "-" || character == ".") && index + 1 < characters.count && characters[index + 1].isNumber {
                var text = String(character)
                index += 1
                while index < characters.count, characters[index].isNumber || characters[index] == "." || characters[index] == "e" || characters[index] == "E"
                    || ((characters[index] == "-" || characters[index] == "+") && (characters[index - 1] == "e" || characters[index - 1] == "E")) {
                    text.append(characters[index])
                    index += 1
                }
                guard Double(text) != nil else { throw fail("'\(text)' is not a number", start) }
                tokens.append(.init(kind: .number(text), column: start + 1))
                continue
            }
            switch character {
            case "'", "\"":
                index += 1
                var text = ""
                var closed = false
                while index < characters.count {
                    let next = characters[index]
                    if next == "\\" && index + 1 < characters.count {
                        text.append(characters[index + 1])
                        index += 2
                        continue
                    }
                    if next == character {
                        closed = true
                        index += 1
                        break
                    }
                    text.append(next)
                    index += 1
                }
                guard closed else { throw fail("the string starting here is not closed", start) }
                tokens.append(.init(kind: .string(text), column: start + 1))
            case "$":
                index += 1
                var name = ""
                while index < characters.count, characters[index].isLetter || characters[index].isNumber || characters[index] == "_" {
                    name.append(characters[index])
                    index += 1
                }
                guard !name.isEmpty else { throw fail("$ must be followed by a placeholder name", start) }
                tokens.append(.init(kind: .placeholder(name), column: start + 1))
            case "%":
                guard index + 1 < characters.count, characters[index + 1] == "@" else { throw fail("% must be %@", start) }
                index += 2
                tokens.append(.init(kind: .positional, column: start + 1))
            case "(": index += 1; tokens.append(.init(kind: .leftParen, column: start + 1))
            case ")": index += 1; tokens.append(.init(kind: .rightParen, column: start + 1))
            case "{": index += 1; tokens.append(.init(kind: .leftBrace, column: start + 1))
            case "}": index += 1; tokens.append(.init(kind: .rightBrace, column: start + 1))
            case ",": index += 1; tokens.append(.init(kind: .comma, column: start + 1))
            case "=", "!", "<", ">", "&", "|":
                let two = index + 1 < characters.count ? String([character, characters[index + 1]]) : String(character)
                if ["==", "!=", "<>", "<=", ">=", "&&", "||"].contains(two) {
                    index += 2
                    let kind: PredicateToken.Kind = two == "&&" ? .identifier("AND") : two == "||" ? .identifier("OR") : .op(two)
                    tokens.append(.init(kind: kind, column: start + 1))
                } else if ["=", "<", ">"].contains(String(character)) {
                    index += 1
                    tokens.append(.init(kind: .op(String(character)), column: start + 1))
                } else if character == "!" {
                    index += 1
                    tokens.append(.init(kind: .identifier("NOT"), column: start + 1))
                } else {
                    throw fail("unexpected '\(character)'", start)
                }
            default:
                throw fail("unexpected '\(character)'", start)
            }
        }
        tokens.append(.init(kind: .end, column: characters.count + 1))
        return tokens
    }
}
