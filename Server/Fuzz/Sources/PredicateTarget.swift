import CanopyPlanner

/// The predicate language of `records(filter:)` (docs/API.md §5): parse, check
/// against a record type's fields and the arguments, write SQL. The input
/// is `ARGS-JSON\nPREDICATE`, or a predicate alone (no arguments).
struct PredicateTarget: FuzzTarget {
    static let name = "predicate"

    static let schema: RecordSchema = [
        "hours": .int64, "ratio": .double, "note": .string, "done": .boolean, "endDate": .timestamp,
        "owner": .reference, "place": .location, "blob": .bytes, "file": .asset, "tags": .list(.string),
        "scores": .list(.int64),
    ]

    func run(_ bytes: UnsafeRawBufferPointer) {
        let text = bytes.text
        var predicate = text
        var args: JSONValue?
        if let newline = text.firstIndex(of: "\n"), let parsed = try? JSONValue(parsing: String(text[..<newline])) {
            args = parsed
            predicate = String(text[text.index(after: newline)...])
        }
        guard let syntax = try? PredicateParser.parse(predicate) else { return }
        guard let checked = try? PredicateChecker(schema: Self.schema, recordType: "Fast", args: args).check(syntax) else { return }
        var builder = SQLBuilder()
        _ = PredicateSQL.write(checked, &builder)
    }
}
