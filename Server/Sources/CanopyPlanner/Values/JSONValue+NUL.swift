extension JSONValue {
    /// Where the first U+0000 is, in a string or an object's key, as a path
    /// after the value's own name (`""` for the value itself, `[2].title`,
    /// `.fields["a"]`); nil when there is none. PostgreSQL refuses the
    /// character in text (22021) and JSONB (22P05), so a request holding it
    /// is refused before the database, naming the place (issue 48).
    public func placeOfNUL() -> String? {
        switch self {
        case .string(let text):
            return text.utf8.contains(0) ? "" : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let place = item.placeOfNUL() { return "[\(index)]\(place)" }
            }
            return nil
        case .object(let members):
            for (key, member) in members {
                if key.utf8.contains(0) { return ".\(Self.printable(key))" }
                if let place = member.placeOfNUL() { return ".\(Self.printable(key))\(place)" }
            }
            return nil
        case .null, .bool, .int, .double:
            return nil
        }
    }

    /// A key as a message shows it: NUL as `\u0000`, at most 40 characters.
    static func printable(_ key: String) -> String {
        String(key.prefix(40)).replacingOccurrences(of: "\u{0}", with: "\\u0000")
    }
}
