import GraphQL

/// What a request without a token may ask (docs/API.md §15): the public
/// database's reads, `lookup`, `records`, `zoneChanges` and `zoneRanges` with
/// `scope: PUBLIC`, in a query, and `__typename`. The gateway refuses
/// every other root field of such a request; the `anonymous-access` fuzz
/// target checks that no document gets past this with anything else.
public enum AnonymousFields {
    /// The root fields open without a token, with `scope: PUBLIC`.
    public static let reads: Set<String> = ["lookup", "records", "zoneChanges", "zoneRanges"]

    /// Whether `field` may run without a token.
    public static func allows(_ field: SelectedField, in request: ParsedRequest) -> Bool {
        guard request.operation.operation == .query else { return false }
        if field.name == "__typename" { return true }
        guard reads.contains(field.name) else { return false }
        return (try? DatabaseScope.read(request.arguments(of: field), publicRefusal: nil)) == .public
    }
}
