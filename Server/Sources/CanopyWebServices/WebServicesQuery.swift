import CanopyPlanner

/// A `records/query` query dictionary (`recordType`, `filterBy`, `sortBy`)
/// in the planner's terms: the filters become one predicate tree
/// (``predicate``, what ``RecordsQuery`` takes: no text to parse); the
/// planner's ``PredicatePrinter`` writes the same tree as Canopy's language
/// (``filter`` with every value a `$placeholder` bound from ``args``),
/// which a query subscription stores.
/// Field names are checked to be names first. Comparators Canopy cannot
/// say are refused by name (docs/WEB_SERVICES.md, "records/query").
public struct WebServicesQuery: Sendable {
    public var recordType: String
    public var predicate: PredicateSyntax = .all
    public var filter: String?
    public var args: [String: JSONValue] = [:]
    public var sort: [SortRequest] = []

    public init(_ query: JSONValue?) throws(QueryError) {
        guard case .object(let query)? = query else {
            throw QueryError(.badRequest, "records/query needs a query dictionary: {\"recordType\": …, \"filterBy\": […], \"sortBy\": […]}")
        }
        guard case .string(let recordType)? = query["recordType"], Names.isRecordType(recordType) else {
            throw QueryError(.badRequest, "query.recordType must be a record type's name")
        }
        self.recordType = recordType
        var trees: [PredicateSyntax] = []
        switch query["filterBy"] {
        case nil, .null?: break
        case .array(let filters)?:
            guard filters.count <= Self.maximumFilters else {
                throw QueryError(.limitExceeded, "query.filterBy holds \(filters.count) filters; at most \(Self.maximumFilters)")
            }
            for (index, filter) in filters.enumerated() {
                trees.append(try clause(filter, at: index))
            }
        case let other?: throw QueryError(.badRequest, "query.filterBy must be a list of filter dictionaries, not \(other.typeName)")
        }
        if let first = trees.first {
            predicate = trees.dropFirst().reduce(first) { .and($0, $1) }
        }
        (filter, args) = PredicatePrinter.print(predicate)
        switch query["sortBy"] {
        case nil, .null?: break
        case .array(let sorts)?:
            for (index, item) in sorts.enumerated() {
                guard case .object(let descriptor) = item else {
                    throw QueryError(.badRequest, "query.sortBy[\(index)] must be a sort descriptor dictionary")
                }
                let key = try Self.key(of: descriptor, at: "query.sortBy[\(index)]")
                // relativeLocation: a Location Dictionary (or a field value
                // holding one): the field sorted by distance from it.
                var origin: SortRequest.Point?
                if var location = descriptor["relativeLocation"], !location.isNull {
                    if case .object(let wrapper) = location, let inner = wrapper["value"] { location = inner }
                    guard case .object(let point) = location,
                          let latitude = PredicateChecker.number(point["latitude"]), let longitude = PredicateChecker.number(point["longitude"]) else {
                        throw QueryError(.badRequest, "query.sortBy[\(index)].relativeLocation must be a Location Dictionary, {\"latitude\": …, \"longitude\": …}")
                    }
                    origin = SortRequest.Point(latitude: latitude, longitude: longitude)
                }
                let ascending: Bool
                switch descriptor["ascending"] {
                case nil, .null?: ascending = true
                case .bool(let flag)?: ascending = flag
                case let other?: throw QueryError(.badRequest, "query.sortBy[\(index)].ascending must be true or false, not \(other.typeName)")
                }
                sort.append(SortRequest(field: key.name, descending: !ascending, relativeLocation: origin))
            }
        case let other?: throw QueryError(.badRequest, "query.sortBy must be a list of sort descriptors, not \(other.typeName)")
        }
    }

    /// The filter's text for a query subscription to keep, read back once:
    /// a field whose name is a word of Canopy's filter language (`not`,
    /// `truepredicate`, …) can be queried (the query runs the tree) but not
    /// kept as text, and is refused here naming it, not by a parse error in
    /// a text the client never wrote.
    public func storableFilter(at place: String) throws(QueryError) -> String? {
        guard let filter else { return nil }
        do {
            _ = try PredicateParser.parse(filter)
        } catch {
            throw QueryError(.badRequest, "\(place).filterBy: a query subscription cannot keep this filter (a field named like a word of Canopy's filter language, such as not or truepredicate, cannot be written in its text)")
        }
        return filter
    }

    /// A field a filter or sort names: a record field (`fieldName`) or a
    /// system field (`systemFieldName`, or its `___` name as a fieldName),
    /// by the name Canopy's predicates give it.
    public struct Key: Sendable {
        public var name: String
        public var isSystem: Bool
    }

    public static func key(of dictionary: [String: JSONValue], at place: String) throws(QueryError) -> Key {
        if case .string(let system)? = dictionary["systemFieldName"] {
            return try systemKey(system, at: place)
        }
        guard case .string(let name)? = dictionary["fieldName"] else {
            throw QueryError(.badRequest, "\(place) needs fieldName or systemFieldName")
        }
        if name.hasPrefix("___") { return try systemKey(name, at: place) }
        guard Names.isFieldName(name) else {
            throw QueryError(.badRequest, "\(place).fieldName '\(name.prefix(60))' is not a field name: a letter followed by letters, digits or _")
        }
        return Key(name: name, isSystem: false)
    }

    private static func systemKey(_ name: String, at place: String) throws(QueryError) -> Key {
        switch name {
        case "recordName", "___recordId": return Key(name: "recordName", isSystem: true)
        case "createdTimestamp", "___createTime": return Key(name: "creationDate", isSystem: true)
        case "modifiedTimestamp", "___modTime": return Key(name: "modificationDate", isSystem: true)
        case "createdUserRecordName", "___createdBy": return Key(name: "createdBy", isSystem: true)
        case "modifiedUserRecordName", "___modifiedBy": return Key(name: "modifiedBy", isSystem: true)
        case "share", "___share", "parent", "___parent":
            throw QueryError(.badRequest, "\(place): filtering or sorting by \(name) is not served by Canopy (docs/WEB_SERVICES.md)")
        default:
            throw QueryError(.badRequest, "\(place).systemFieldName must be recordName, createdTimestamp, modifiedTimestamp, createdUserRecordName or modifiedUserRecordName, not '\(name.prefix(60))'")
        }
    }

    /// The most filter dictionaries one query takes: Web Services' limit,
    /// in the planner's terms (each is a comparison or a few).
    public static let maximumFilters = 100

    /// The comparisons the filters so far make: the planner's language
    /// takes at most ``PredicateParser/maximumComparisons`` in one filter,
    /// and each token of `CONTAINS_ANY_TOKENS` and each value of
    /// `LIST_CONTAINS_ANY`/`_ALL` is one.
    private var comparisons = 0

    /// Counts `count` more comparisons, refusing the query past the limit
    /// before anything is built for them.
    private mutating func spend(_ count: Int, at place: String) throws(QueryError) {
        comparisons += count
        guard comparisons <= PredicateParser.maximumComparisons else {
            throw QueryError(.limitExceeded, "\(place): the filters make \(comparisons) comparisons so far (each token of CONTAINS_ANY_TOKENS and each value of LIST_CONTAINS_ANY or LIST_CONTAINS_ALL is one); at most \(PredicateParser.maximumComparisons)")
        }
    }

    private mutating func clause(_ item: JSONValue, at index: Int) throws(QueryError) -> PredicateSyntax {
        let place = "query.filterBy[\(index)]"
        guard case .object(let filter) = item else { throw QueryError(.badRequest, "\(place) must be a filter dictionary") }
        guard case .string(let comparator)? = filter["comparator"] else {
            throw QueryError(.badRequest, "\(place) needs a comparator (EQUALS, LESS_THAN, IN, …)")
        }
        // The token comparators search a record's text fields: the Filter
        // Dictionary needs no fieldName for them.
        let isTokenSearch = comparator == "CONTAINS_ALL_TOKENS" || comparator == "CONTAINS_ANY_TOKENS"
        let key = isTokenSearch && filter["fieldName"] == nil && filter["systemFieldName"] == nil
            ? Key(name: "self", isSystem: false)
            : try Self.key(of: filter, at: place)
        guard let fieldValue = filter["fieldValue"] else { throw QueryError(.badRequest, "\(place) needs a fieldValue, {\"value\": …}") }
        var value = try WebServicesFieldValue.canopyValue(fieldValue, name: "\(place).fieldValue", existing: nil)
        if key.isSystem { value = Self.systemValue(value) }
        let name = key.name
        try spend(1, at: place)
        func values() throws(QueryError) -> [JSONValue] {
            guard case .array(let items) = value, !items.isEmpty else {
                throw QueryError(.badRequest, "\(place): \(comparator) takes a non-empty list of values")
            }
            return items
        }
        func test(_ kind: PredicateSyntax.TestSyntax.Kind, key: String = name) -> PredicateSyntax {
            .test(.init(key: key, keyColumn: 0, kind: kind))
        }
        func literal(_ value: JSONValue) -> PredicateSyntax.OperandSyntax { .literal(value, column: 0) }
        // In Canopy's filter text `self CONTAINS` searches the record's text:
        // a field named self cannot be tested for a member (the stored text
        // of a query subscription would search instead; found by fuzzing).
        if name == "self", !key.isSystem, !isTokenSearch, comparator.contains("LIST_CONTAINS") {
            throw QueryError(.badRequest, "\(place): \(comparator) cannot test a field named self (self CONTAINS searches a record's text; use CONTAINS_ALL_TOKENS or CONTAINS_ANY_TOKENS)")
        }
        switch comparator {
        case "EQUALS": return test(.compare("==", literal(value)))
        case "NOT_EQUALS": return test(.compare("!=", literal(value)))
        case "LESS_THAN": return test(.compare("<", literal(value)))
        case "LESS_THAN_OR_EQUALS": return test(.compare("<=", literal(value)))
        case "GREATER_THAN": return test(.compare(">", literal(value)))
        case "GREATER_THAN_OR_EQUALS": return test(.compare(">=", literal(value)))
        case "IN": return test(.in(literal(.array(try values()))))
        case "NOT_IN": return .not(test(.in(literal(.array(try values())))))
        case "BEGINS_WITH": return test(.beginsWith(literal(value)))
        case "NOT_BEGINS_WITH": return .not(test(.beginsWith(literal(value))))
        case "LIST_CONTAINS": return test(.contains(literal(value)))
        case "NOT_LIST_CONTAINS": return .not(test(.contains(literal(value))))
        case "LIST_CONTAINS_ALL", "NOT_LIST_CONTAINS_ALL", "LIST_CONTAINS_ANY", "NOT_LIST_CONTAINS_ANY":
            let all = comparator.hasSuffix("ALL")
            let items = try values()
            try spend(items.count - 1, at: place)
            var tree: PredicateSyntax?
            for item in items {
                let one = test(.contains(literal(item)))
                tree = tree.map { all ? .and($0, one) : .or($0, one) } ?? one
            }
            return comparator.hasPrefix("NOT_") ? .not(tree!) : tree!
        case "CONTAINS_ALL_TOKENS":
            guard case .string = value else { throw QueryError(.badRequest, "\(place): CONTAINS_ALL_TOKENS takes a STRING of tokens") }
            return test(.selfContains(literal(value)), key: "self")
        case "CONTAINS_ANY_TOKENS":
            guard case .string(let text) = value else { throw QueryError(.badRequest, "\(place): CONTAINS_ANY_TOKENS takes a STRING of tokens") }
            let tokens = text.split(whereSeparator: { $0.isWhitespace || $0.isPunctuation }).map(String.init)
            guard !tokens.isEmpty else { throw QueryError(.badRequest, "\(place): CONTAINS_ANY_TOKENS takes at least one token") }
            try spend(tokens.count - 1, at: place)
            var tree: PredicateSyntax?
            for token in tokens {
                let one = test(.selfContains(literal(.string(token))), key: "self")
                tree = tree.map { .or($0, one) } ?? one
            }
            return tree!
        case "NEAR":
            guard let metres = PredicateChecker.number(filter["distance"]), metres >= 0 else {
                throw QueryError(.badRequest, "\(place): NEAR needs distance, a radius in metres")
            }
            let kilometres = JSONValue.double(metres / 1000)
            return test(.distance(location: literal(value), op: "<=", kilometres: literal(kilometres)))
        case "LIST_MEMBER_BEGINS_WITH": return test(.anyBeginsWith(literal(value)))
        case "NOT_LIST_MEMBER_BEGINS_WITH": return .not(test(.anyBeginsWith(literal(value))))
        default:
            throw QueryError(.badRequest, "\(place): unknown comparator '\(comparator.prefix(40))'")
        }
    }

    /// A system field's value as Canopy's predicates compare it: a
    /// reference to a user or record by its name.
    private static func systemValue(_ value: JSONValue) -> JSONValue {
        if case .object(let object) = value, object["type"] == .string("REFERENCE"), let name = object["recordName"] { return name }
        if case .array(let items) = value { return .array(items.map(systemValue)) }
        return value
    }
}
