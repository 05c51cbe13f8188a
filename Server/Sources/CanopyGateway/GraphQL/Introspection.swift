import CanopyPlanner
import GraphQL
import Hummingbird
import Synchronization

/// Introspection (`__schema`, `__type`), answered by GraphQLSwift's
/// executor over Canopy's schema in memory, within the limits every other
/// field has (issue 48): the shape check counts its aliases and depth, and
/// ``IntrospectionCost`` what its answer may weigh, before it runs. Who may
/// introspect is the operator's choice (``IntrospectionAccess``).
enum Introspection {
    /// The schema's graph as introspection walks it, read once from the
    /// executor's own answer to ``graphQuery``.
    static var graph: IntrospectionCost.Graph {
        get async { await read.value }
    }
    private static let read = Task { await readGraph() }

    static let graphQuery = """
        { __schema { queryType { name } types { kind name
            fields(includeDeprecated: true) { args { type { ...T } } type { ...T } }
            inputFields { type { ...T } } enumValues(includeDeprecated: true) { name }
            interfaces { name } possibleTypes { name } }
          directives { args { type { ...T } } locations } } }
        fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } }
        """

    private static func readGraph() async -> IntrospectionCost.Graph {
        var graph = IntrospectionCost.Graph()
        // The schema is Canopy's own and the query a constant: a failure
        // here is a broken build, which the introspection tests meet.
        guard let document = try? parse(source: Source(body: graphQuery, name: "graph")),
              let result = try? await GraphQL.execute(schema: GraphQLAPI.schema, documentAST: document, rootValue: (), context: ()),
              case .dictionary(let data)? = result.data, case .dictionary(let schema)? = data["__schema"],
              case .array(let types)? = schema["types"] else { return graph }
        func list(_ value: Map?) -> [Map] { if case .array(let items)? = value { items } else { [] } }
        func string(_ value: Map?) -> String? { if case .string(let text)? = value { text } else { nil } }
        func member(_ value: Map?, _ key: String) -> Map? { if case .dictionary(let object)? = value { object[key] } else { nil } }
        func ref(_ value: Map?) -> IntrospectionCost.TypeRef {
            switch string(member(value, "kind")) {
            case "LIST": return .list(ref(member(value, "ofType")))
            case "NON_NULL": return .nonNull(ref(member(value, "ofType")))
            default: return .named(string(member(value, "name")) ?? "")
            }
        }
        func field(_ value: Map) -> IntrospectionCost.Member {
            .init(arguments: list(member(value, "args")).map { ref(member($0, "type")) }, type: ref(member(value, "type")))
        }
        for value in types {
            guard let name = string(member(value, "name")) else { continue }
            var type = IntrospectionCost.NamedType()
            type.fields = list(member(value, "fields")).map(field)
            type.inputFields = list(member(value, "inputFields")).map(field)
            type.enumValues = list(member(value, "enumValues")).count
            type.interfaces = list(member(value, "interfaces")).compactMap { string(member($0, "name")) }
            type.possibleTypes = list(member(value, "possibleTypes")).compactMap { string(member($0, "name")) }
            graph.types[name] = type
            graph.typeOrder.append(name)
        }
        graph.rootTypes = [string(member(schema["queryType"], "name")) ?? "Query"]
        graph.directives = list(schema["directives"]).map { directive in
            (list(member(directive, "args")).map { ref(member($0, "type")) }, list(member(directive, "locations")).count)
        }
        return graph
    }

    /// The answer to an introspection-only document already parsed,
    /// validated and checked. Answers are kept by document, operation and
    /// variables (the schema never changes while the process runs): GraphQL
    /// tools send the same standard query over and over, and GraphQLSwift's
    /// executor spends about 150 ms of CPU on it (BENCHMARKS.md, "Refusals").
    /// A document not seen before runs on `gate`, one at a time per gateway
    /// and kind of caller (``Gates``); another arriving meanwhile is 429
    /// with `Retry-After`, so anonymous introspection can never hold more
    /// than one core however many ask.
    /// `__typename` alone (no `__schema` or `__type`) costs next to
    /// nothing: it is answered at once, neither kept nor gated.
    static func answer(_ parsed: ParsedRequest, roots: [SelectedField], gate: Gate) async throws -> Response {
        guard roots.contains(where: { $0.name == "__schema" || $0.name == "__type" }) else {
            return GraphQLResponse.json(try await execute(parsed), status: .ok)
        }
        let key = AnswerKey(query: parsed.source, operationName: parsed.operation.name?.value, variables: JSONValue.object(parsed.variables).jsonText)
        if let cached = answers[key] {
            return GraphQLResponse.json(cached, status: .ok)
        }
        guard gate.running.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            var error = APIError(.limitExceeded, "another introspection is being answered; ask again in a second (an answer is kept: the same document again is answered at once)",
                                 status: .tooManyRequests)
            error.retryAfter = 1
            throw error
        }
        defer { gate.running.store(false, ordering: .releasing) }
        let text = try await execute(parsed)
        let weight = Self.weight(of: key)
        if weight < Int.max { answers.keep(text, for: key, bytes: weight + text.utf8.count) }
        return GraphQLResponse.json(text, status: .ok)
    }

    /// `IntrospectionCost`'s check, its refusals kept by document and
    /// variables as answers are: one resent costs a lookup.
    static func checkCost(_ roots: [SelectedField], in parsed: ParsedRequest, maximum: Int) async throws {
        let key = AnswerKey(query: parsed.source, operationName: parsed.operation.name?.value,
                            variables: JSONValue.object(parsed.variables).jsonText, maximum: maximum)
        if let refusal = refusals[key] { throw refusal }
        do {
            try IntrospectionCost.check(roots, graph: await graph, maximum: maximum, in: parsed)
        } catch let refusal as QueryError {
            refusals.keep(refusal, for: key, bytes: weight(of: key))
            throw refusal
        }
    }

    /// GraphQLSwift's executor over the parsed document, as JSON text.
    private static func execute(_ parsed: ParsedRequest) async throws -> String {
        let result = try await GraphQL.execute(
            schema: GraphQLAPI.schema, documentAST: parsed.document, rootValue: (), context: (),
            variableValues: parsed.variables.mapValues(\.map), operationName: parsed.operation.name?.value
        )
        return String(decoding: try GraphQLJSONEncoder().encode(result), as: UTF8.self)
    }

    /// One gateway's turn at answering a new introspection document.
    final class Gate: Sendable {
        let running = Atomic<Bool>(false)
    }

    /// A gateway's two gates: anonymous documents take turns on one, and
    /// signed-in callers (each under their own rate) on the other, so
    /// anonymous documents can never keep a developer's introspection
    /// waiting (issue 64: it was refused 429 three times in a row).
    final class Gates: Sendable {
        let anonymous = Gate()
        let signedIn = Gate()

        func gate(signedIn isSignedIn: Bool) -> Gate {
            isSignedIn ? signedIn : anonymous
        }
    }

    private struct AnswerKey: Hashable, Sendable {
        var query: String
        var operationName: String?
        var variables: String
        var maximum = 0
    }

    /// Answers kept; emptied when full. Each is at most what
    /// `--max-introspection-cost` admits (a few hundred KB); bounded by
    /// bytes too, and a document over 16 KiB is never kept (issue 64).
    static let answerCapacity = 32
    private static let answers = DocumentCache<AnswerKey, String>(capacity: answerCapacity, byteCapacity: 16 << 20, largestEntry: 2 << 20)
    private static let refusals = DocumentCache<AnswerKey, QueryError>(capacity: answerCapacity * 4, byteCapacity: 2 << 20, largestEntry: 16 << 10)
    static let largestKeptDocument = 16 << 10

    /// What a key weighs, or more than any cache keeps when its document is too long to keep.
    private static func weight(of key: AnswerKey) -> Int {
        let bytes = key.query.utf8.count + key.variables.utf8.count
        return bytes > largestKeptDocument ? Int.max : bytes
    }
}
