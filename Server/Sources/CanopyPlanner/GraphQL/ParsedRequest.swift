import GraphQL
import Synchronization

/// A GraphQL request that parsed and validated against Canopy's schema,
/// with the operation to run picked out.
public struct ParsedRequest: @unchecked Sendable {
    public let source: String
    public let document: Document
    public let operation: OperationDefinition
    public let fragments: [String: FragmentDefinition]
    public private(set) var variables: [String: JSONValue]
    /// This parse's number, unique for the process's life: the plan cache
    /// keys plans by it (the same text parsed again after the cache of
    /// parsed documents was emptied gets a new one).
    public let documentID: Int
    private static let documentIDs = Atomic<Int>(0)
    /// What this parse's fields' arguments are, worked out once.
    let memo: DocumentMemo
    /// The base of share URLs (`<publicURL>/share/<token>`), from the
    /// server's configuration.
    public var publicURL = "http://127.0.0.1:8080"
    let locator: SourceLocator

    /// Limits on the shape of a document, checked before anything runs.
    public struct Limits: Sendable {
        public var maximumDepth: Int
        public var maximumAliases: Int
        /// Depth inside introspection (`__schema`, `__type`): the standard
        /// query's `ofType` chain nests 14 deep, which no other field needs.
        public var maximumIntrospectionDepth: Int
        /// Selections the shape walk may visit, fragments spread where used:
        /// a few spreads of a few fragments spreading each other make a
        /// selection tree exponential in the document's length.
        public var maximumSelections: Int
        public init(maximumDepth: Int = 12, maximumAliases: Int = 30, maximumIntrospectionDepth: Int = 20, maximumSelections: Int = 5_000) {
            self.maximumDepth = maximumDepth
            self.maximumAliases = maximumAliases
            self.maximumIntrospectionDepth = maximumIntrospectionDepth
            self.maximumSelections = maximumSelections
        }
    }

    /// Documents already parsed and validated, by text, operation name and
    /// limits: clients send the same few documents over and over, with new
    /// variables, and parsing and validating them is most of what the
    /// gateway does for a small request. Bounded: emptied when full.
    struct CacheKey: Hashable, Sendable {
        var query: String
        var operationName: String?
        var maximumDepth: Int
        var maximumAliases: Int
        var maximumIntrospectionDepth: Int
        var maximumSelections: Int
    }

    /// At most 512 documents, 8 MiB of text, none over 64 KiB (issue 64);
    /// a parsed document is counted at three times its text for its tree.
    static let cache = DocumentCache<CacheKey, ParsedRequest>(capacity: 512, byteCapacity: 8 << 20, largestEntry: 64 << 10)
    /// Documents refused before, by the same key, with their refusal.
    static let refusals = DocumentCache<CacheKey, QueryError>(capacity: 512, byteCapacity: 4 << 20, largestEntry: 64 << 10)

    /// Parses and validates (or finds the document parsed and validated
    /// before); throws `QueryError` (`badRequest`) with the line and column
    /// of each fault.
    public init(
        query: String, variables: [String: JSONValue] = [:], operationName: String? = nil,
        limits: Limits = Limits()
    ) throws {
        let key = CacheKey(query: query, operationName: operationName, maximumDepth: limits.maximumDepth, maximumAliases: limits.maximumAliases,
                           maximumIntrospectionDepth: limits.maximumIntrospectionDepth, maximumSelections: limits.maximumSelections)
        if let cached = Self.cache[key] {
            self = cached
            try InputObjectFields.check(variables, of: operation) { location(of: $0) }
            self.variables = variables
            return
        }
        // A document refused before is refused again at the cost of a
        // lookup: a client resending one that is over a limit (issue 48's
        // alias flood) costs what a small request costs.
        if let refusal = Self.refusals[key] { throw refusal }
        do {
            try self.init(parsing: query, operationName: operationName, limits: limits)
        } catch let refusal as QueryError {
            Self.refusals.keep(refusal, for: key, bytes: query.utf8.count + refusal.message.utf8.count)
            throw refusal
        }
        Self.cache.keep(self, for: key, bytes: query.utf8.count * 3)
        try InputObjectFields.check(variables, of: operation) { location(of: $0) }
        self.variables = variables
    }

    private init(parsing query: String, operationName: String?, limits: Limits) throws {
        let variables: [String: JSONValue] = [:]
        let locator = SourceLocator(query)
        try DocumentNesting.check(query, locator: locator)
        let document: Document
        do {
            document = try parse(source: Source(body: query, name: "request"))
        } catch let error as GraphQLError {
            throw QueryError(.badRequest, Self.firstLine(error.message), locations: error.positions.map(locator.location(ofUTF8Offset:)))
        }
        try DefinitionNames.check(document, locator: locator)
        let operations = document.definitions.compactMap { $0 as? OperationDefinition }
        let chosen: OperationDefinition
        if let operationName {
            guard let named = operations.first(where: { $0.name?.value == operationName }) else {
                throw QueryError(.badRequest, "the document has no operation named '\(operationName)'")
            }
            chosen = named
        } else {
            guard operations.count == 1 else {
                throw QueryError(.badRequest, "the document has \(operations.count) operations: name the one to run with operationName")
            }
            chosen = operations[0]
        }
        var fragments: [String: FragmentDefinition] = [:]
        for case let fragment as FragmentDefinition in document.definitions {
            fragments[fragment.name.value] = fragment
        }
        // The shape first: validation walks fragments as spread too, and
        // every definition, used or not, whatever it holds (issue 64).
        do {
            try DocumentSize.check(document, limits: .init(selections: limits.maximumSelections))
        } catch {
            throw QueryError(.limitExceeded, error.message, locations: error.node?.loc.map { [locator.location(ofUTF8Offset: $0.start)] } ?? [])
        }
        try Self.checkShape(chosen, fragments: fragments, locator: locator, limits: limits)
        try Self.validated(query, document, locator: locator)
        try FieldMerging.check(chosen, fragments: fragments, locator: locator)
        try InputObjectFields.checkLiterals(of: chosen, fragments: fragments) { node in
            node.loc.map { [locator.location(ofUTF8Offset: $0.start)] } ?? []
        }
        self.source = query
        self.document = document
        self.operation = chosen
        self.fragments = fragments
        self.variables = variables
        self.locator = locator
        self.documentID = Self.documentIDs.add(1, ordering: .relaxed).newValue
        self.memo = DocumentMemo()
    }

    /// What a share URL is before its token.
    public var shareURLPrefix: String {
        (publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL) + "/share/"
    }

    public func location(of node: (any Node)?) -> [QueryError.Location] {
        guard let loc = node?.loc else { return [] }
        return [locator.location(ofUTF8Offset: loc.start)]
    }

    /// The operation's root fields, fragments and @skip/@include applied.
    public func rootFields() throws -> [SelectedField] {
        try memo.rootFields(of: self) { try SelectedField.collect(operation.selectionSet, in: self) }
    }

    /// True when the operation asks only for introspection (`__schema`,
    /// `__type`, `__typename`), which GraphQLSwift's executor answers.
    public func isIntrospectionOnly() throws -> Bool {
        Self.isIntrospectionOnly(try rootFields())
    }

    /// The same, of root fields already collected.
    public static func isIntrospectionOnly(_ roots: [SelectedField]) -> Bool {
        roots.allSatisfy { $0.name.hasPrefix("__") }
    }

    /// Depth, aliases and the number of selections, counted over the
    /// whole operation, introspection included (issue 48: aliases inside
    /// `__schema` were once not counted). Introspection may nest deeper
    /// (``Limits/maximumIntrospectionDepth``); what its answer weighs is
    /// ``IntrospectionCost``'s.
    private static func checkShape(_ operation: OperationDefinition, fragments: [String: FragmentDefinition], locator: SourceLocator, limits: Limits) throws {
        func location(of node: (any Node)?) -> [QueryError.Location] {
            node?.loc.map { [locator.location(ofUTF8Offset: $0.start)] } ?? []
        }
        var aliases = 0
        var selections = 0
        func walk(_ set: SelectionSet, depth: Int, introspection: Bool, visiting: Set<String>) throws {
            let maximum = introspection ? max(limits.maximumIntrospectionDepth, limits.maximumDepth) : limits.maximumDepth
            guard depth <= maximum else {
                throw QueryError(.limitExceeded, "the document nests fields deeper than the limit of \(maximum)", locations: location(of: set))
            }
            for selection in set.selections {
                selections += 1
                guard selections <= limits.maximumSelections else {
                    throw QueryError(.limitExceeded, "the document selects more than \(limits.maximumSelections) fields, fragments spread where they are used", locations: location(of: selection))
                }
                switch selection {
                case let field as Field:
                    if field.alias != nil { aliases += 1 }
                    guard aliases <= limits.maximumAliases else {
                        throw QueryError(.limitExceeded, "the document uses more aliases than the limit of \(limits.maximumAliases)", locations: location(of: field))
                    }
                    if let child = field.selectionSet {
                        try walk(child, depth: depth + 1, introspection: introspection || field.name.value.hasPrefix("__"), visiting: visiting)
                    }
                case let inline as InlineFragment:
                    try walk(inline.selectionSet, depth: depth, introspection: introspection, visiting: visiting)
                case let spread as FragmentSpread:
                    let name = spread.name.value
                    if !visiting.contains(name), let fragment = fragments[name] {
                        try walk(fragment.selectionSet, depth: depth, introspection: introspection, visiting: visiting.union([name]))
                    }
                default:
                    break
                }
            }
        }
        try walk(operation.selectionSet, depth: 1, introspection: false, visiting: [])
    }

    /// Documents up to this length are validated as parsed, and their
    /// errors located; a longer one is parsed again without locations for
    /// validation, since the library locates each error it makes by scanning
    /// the document from its start (issue 64): its errors say what, not where.
    static let locatedValidationLimit = 16 * 1024
    /// How many of validation's errors a refusal locates.
    static let locatedErrors = 5

    /// Refuses the document with validation's first error, located.
    private static func validated(_ query: String, _ document: Document, locator: SourceLocator) throws {
        let errors: [GraphQLError]
        if query.utf8.count <= locatedValidationLimit {
            errors = validate(schema: GraphQLAPI.schema, ast: document)
        } else {
            let bare = try parse(source: Source(body: query, name: "request"), noLocation: true)
            errors = validate(schema: GraphQLAPI.schema, ast: bare)
        }
        guard let first = errors.first else { return }
        throw QueryError(
            .badRequest, first.message,
            locations: errors.prefix(locatedErrors).flatMap { error in
                error.nodes.compactMap { $0.loc.map { locator.location(ofUTF8Offset: $0.start) } }
            }
        )
    }

    /// GraphQLSwift's syntax messages embed its own (wrong after non-ASCII)
    /// position; keep the words, the locations say where.
    static func firstLine(_ message: String) -> String {
        let line = String(message.split(separator: "\n", maxSplits: 1).first ?? Substring(message))
        if let range = line.range(of: #"^Syntax Error .*?\(\d+:\d+\) "#, options: .regularExpression) {
            return "Syntax error: " + line[range.upperBound...]
        }
        return line
    }
}
