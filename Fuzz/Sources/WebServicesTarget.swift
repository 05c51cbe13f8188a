import CanopyPlanner

/// A CloudKit Web Services request body (API.md §16): its `query` read as
/// `records/query` reads it, and every field dictionary of its `fields`
/// and of each operation's record read as `records/modify` reads them,
/// then written back as an answer would. Properties: a filter, however
/// written, never carries a value in its text (every value is a
/// `$placeholder` of `args`, every name a field name), and it parses and
/// checks as Canopy's predicates do.
struct WebServicesTarget: FuzzTarget {
    static let name = "web-services"

    func run(_ bytes: UnsafeRawBufferPointer) {
        guard case .object(let body)? = try? JSONValue(parsing: bytes) else { return }
        if let query = try? WebServicesQuery(body["query"]) {
            if let filter = query.filter {
                for word in filter.split(whereSeparator: { " (),".contains($0) }) {
                    let allowed = word.hasPrefix("$v") && Int(word.dropFirst(2)) != nil
                        || ["AND", "OR", "NOT", "IN", "BEGINSWITH", "CONTAINS", "self", "==", "!=", "<", "<=", ">", ">="].contains(word)
                        || word.hasPrefix("distanceToLocation:fromLocation:")
                        || Names.isFieldName(String(word))
                    require(allowed, "a value reached a filter's text: \(word) in \(filter)")
                }
                require((try? PredicateParser.parse(filter)) != nil, "a filter the translation wrote does not parse: \(filter)")
            }
        }
        var dictionaries: [(String, JSONValue)] = []
        if case .object(let fields)? = body["fields"] { dictionaries += fields.map { ($0.key, $0.value) } }
        if case .array(let operations)? = body["operations"] {
            for case .object(let operation) in operations {
                if case .object(let record)? = operation["record"], case .object(let fields)? = record["fields"] {
                    dictionaries += fields.map { ($0.key, $0.value) }
                }
            }
        }
        for (name, field) in dictionaries {
            for existing in [nil, FieldType.boolean, .double, .list(.timestamp)] as [FieldType?] {
                guard let value = try? WebServicesFieldValue.canopyValue(field, name: name, existing: existing) else { continue }
                _ = WebServicesFieldValue.webServicesField(value, type: existing, numbersAsStrings: true)
            }
        }
    }
}
