/// What an introspection selection (`__schema`, `__type`) will make the
/// executor write, counted before it runs (issue 48). Introspection is
/// answered from the schema in memory, but an answer is still work: 100
/// aliases of `__schema` made a 2.1 MB answer from an 8 KB request, and
/// `fields { type { fields { type … } } }` grows by a type's fields at each
/// step. So the selection is walked over the schema's own graph
/// (``Graph``) and every value the answer would hold is counted, exactly,
/// stopping as soon as the count passes the maximum: the check costs at
/// most what the largest admitted answer costs to count, and a refusal
/// costs what a small request does (docs/SECURITY.md, "Introspection").
public enum IntrospectionCost {
    /// A type as introspection reaches it: a named type, or a list or
    /// non-null wrapper (`ofType`).
    public indirect enum TypeRef: Sendable, Equatable {
        case named(String)
        case list(TypeRef)
        case nonNull(TypeRef)
    }

    /// A field or an input value: its arguments (none for an input value)
    /// and its type.
    public struct Member: Sendable {
        public var arguments: [TypeRef]
        public var type: TypeRef
        public init(arguments: [TypeRef], type: TypeRef) {
            self.arguments = arguments
            self.type = type
        }
    }

    /// A named type's lists, as `__Type` answers them.
    public struct NamedType: Sendable {
        public var fields: [Member] = []
        public var inputFields: [Member] = []
        public var enumValues = 0
        public var interfaces: [String] = []
        public var possibleTypes: [String] = []
        public init() {}
    }

    /// The schema as introspection sees it, read once from the executor's
    /// own answer (`Introspection.graph` in the gateway).
    public struct Graph: Sendable {
        public var types: [String: NamedType] = [:]
        public var typeOrder: [String] = []
        public var rootTypes: [String] = []
        /// Each directive's arguments and how many locations it names.
        public var directives: [(arguments: [TypeRef], locations: Int)] = []
        public init() {}
    }

    /// Throws `limitExceeded` when the introspection root fields of `roots`
    /// would answer more than `maximum` values together.
    public static func check(_ roots: [SelectedField], graph: Graph, maximum: Int, in request: ParsedRequest) throws {
        var counter = Counter(graph: graph, remaining: maximum)
        for field in roots where field.name.hasPrefix("__") {
            let fits: Bool
            switch field.name {
            case "__schema": fits = counter.schema(field.children)
            case "__type": fits = counter.namedType(field, in: request)
            default: fits = counter.take(1)
            }
            guard fits else {
                throw QueryError(
                    .limitExceeded,
                    "the introspection would answer more than \(maximum) values; ask for the schema once, without aliases of it or types nested in types",
                    locations: request.location(of: field.field)
                )
            }
        }
    }

    /// Counts down what the answer holds; false once it passes the maximum.
    struct Counter {
        let graph: Graph
        var remaining: Int

        mutating func take(_ values: Int) -> Bool {
            remaining -= values
            return remaining >= 0
        }

        mutating func schema(_ selection: [SelectedField]) -> Bool {
            for child in selection {
                guard take(1) else { return false }
                switch child.name {
                case "types":
                    for name in graph.typeOrder where !type(.named(name), child.children) { return false }
                case "queryType", "mutationType", "subscriptionType":
                    guard type(.named(graph.rootTypes.first ?? "Query"), child.children) else { return false }
                case "directives":
                    for directive in graph.directives {
                        guard take(1) else { return false }
                        for field in child.children {
                            guard take(1) else { return false }
                            switch field.name {
                            case "args": for argument in directive.arguments where !member(Member(arguments: [], type: argument), field.children) { return false }
                            case "locations": guard take(directive.locations) else { return false }
                            default: break
                            }
                        }
                    }
                default: break
                }
            }
            return true
        }

        /// `__type(name:)`: the named type when the name is known here,
        /// else the widest type (an upper bound).
        mutating func namedType(_ field: SelectedField, in request: ParsedRequest) -> Bool {
            guard take(1) else { return false }
            let asked = (try? request.arguments(of: field).string("name")) ?? nil
            if let asked, graph.types[asked] != nil { return type(.named(asked), field.children) }
            let widest = graph.typeOrder.max { (graph.types[$0]?.fields.count ?? 0) < (graph.types[$1]?.fields.count ?? 0) }
            return type(.named(widest ?? "Query"), field.children)
        }

        mutating func type(_ ref: TypeRef, _ selection: [SelectedField]) -> Bool {
            guard take(1) else { return false }
            let named: NamedType? = if case .named(let name) = ref { graph.types[name] } else { nil }
            for child in selection {
                guard take(1) else { return false }
                switch child.name {
                case "fields":
                    for field in named?.fields ?? [] where !member(field, child.children) { return false }
                case "inputFields":
                    for field in named?.inputFields ?? [] where !member(field, child.children) { return false }
                case "interfaces":
                    for name in named?.interfaces ?? [] where !type(.named(name), child.children) { return false }
                case "possibleTypes":
                    for name in named?.possibleTypes ?? [] where !type(.named(name), child.children) { return false }
                case "enumValues":
                    guard take((named?.enumValues ?? 0) * max(1, child.children.count)) else { return false }
                case "ofType":
                    switch ref {
                    case .list(let inner), .nonNull(let inner): guard type(inner, child.children) else { return false }
                    case .named: break
                    }
                default: break
                }
            }
            return true
        }

        mutating func member(_ member: Member, _ selection: [SelectedField]) -> Bool {
            guard take(1) else { return false }
            for child in selection {
                guard take(1) else { return false }
                switch child.name {
                case "args":
                    for argument in member.arguments where !self.member(Member(arguments: [], type: argument), child.children) { return false }
                case "type":
                    guard type(member.type, child.children) else { return false }
                default: break
                }
            }
            return true
        }
    }
}
