/// A records query in the planner's terms: what GraphQL's `records` field
/// and Web Services' `records/query` both become before ``RecordsPlan``
/// builds its statement. The filter is a predicate tree, not text: a door
/// that has no text (Web Services' filter dictionaries) builds the tree.
public struct RecordsQuery: Sendable {
    public var zone: ZoneReference
    public var recordType: String
    public var predicate: PredicateSyntax
    /// The values of the predicate's placeholders (`$name`, `%@`).
    public var args: JSONValue?
    /// Sort keys, checked against the schema by the plan.
    public var sort: [SortRequest]
    public var limit: Int
    /// Where the previous page ended (``RecordsPlan/page(_:)``'s cursor).
    public var cursor: String?
    /// What names the filter in a cursor's fingerprint: its text (with its
    /// values), or else the tree's description, which costs more: a door
    /// that has a text gives it.
    public var filterText: String
    /// The filter's text with its values as placeholders, where
    /// ``filterText`` holds the values (Web Services' printed filter): what
    /// of the filter a plan cache's key keeps, so that another value is
    /// the same shape. Nil: ``filterText`` has no values in it.
    public var filterShape: String?

    public init(
        zone: ZoneReference, recordType: String, predicate: PredicateSyntax, args: JSONValue? = nil, sort: [SortRequest] = [],
        limit: Int, cursor: String? = nil, filterText: String? = nil, filterShape: String? = nil
    ) {
        self.zone = zone
        self.recordType = recordType
        self.predicate = predicate
        self.args = args
        self.sort = sort
        self.limit = limit
        self.cursor = cursor
        self.filterText = filterText ?? (predicate == .all ? "" : String(describing: predicate))
        self.filterShape = filterShape
    }

    /// Where a GraphQL request's parts are, for errors that point at them.
    struct Locations {
        var field: [QueryError.Location] = []
        var filter: [QueryError.Location] = []
        var sort: [QueryError.Location] = []
        var cursor: [QueryError.Location] = []
    }
}
