/// A bound on how deep a GraphQL document nests `{`, `[` and `(`, checked
/// on its text before the GraphQL library parses it. The library's parser
/// and lexer recurse once per level: 20,000 nested `[` or selections
/// overflow the stack and take the gateway down (found while fuzzing,
/// docs/FUZZING.md). Strings, block strings and comments are skipped, so
/// brackets inside them do not count.
enum DocumentNesting {
    /// Far above what a valid document needs: selections may nest 12 deep
    /// (`Limits.maximumDepth`), and values a few levels more.
    static let maximum = 64

    static func check(_ query: String, locator: SourceLocator) throws {
        var text = query
        let deepest: Int? = text.withUTF8 { bytes in
            var depth = 0
            var index = 0
            let count = bytes.count
            while index < count {
                switch bytes[index] {
                case UInt8(ascii: "#"):
                    while index < count, bytes[index] != UInt8(ascii: "\n"), bytes[index] != UInt8(ascii: "\r") { index += 1 }
                case UInt8(ascii: "\""):
                    if index + 2 < count, bytes[index + 1] == UInt8(ascii: "\""), bytes[index + 2] == UInt8(ascii: "\"") {
                        index += 3
                        while index < count {
                            if bytes[index] == UInt8(ascii: "\\"), index + 3 < count, bytes[index + 1] == UInt8(ascii: "\""),
                               bytes[index + 2] == UInt8(ascii: "\""), bytes[index + 3] == UInt8(ascii: "\"") {
                                index += 4
                                continue
                            }
                            if bytes[index] == UInt8(ascii: "\""), index + 2 < count, bytes[index + 1] == UInt8(ascii: "\""),
                               bytes[index + 2] == UInt8(ascii: "\"") {
                                index += 2
                                break
                            }
                            index += 1
                        }
                    } else {
                        index += 1
                        while index < count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\n") {
                            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                        }
                    }
                case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "("):
                    depth += 1
                    if depth > maximum { return index }
                case UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ")"):
                    depth = max(0, depth - 1)
                default:
                    break
                }
                index += 1
            }
            return nil
        }
        if let deepest {
            throw QueryError(.limitExceeded, "the document nests {, [ and ( more than \(maximum) deep",
                             locations: [locator.location(ofUTF8Offset: deepest)])
        }
    }
}
