import CanopyPlanner
import GraphQL
import Hummingbird

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
              let result = try? await execute(schema: GraphQLAPI.schema, documentAST: document, rootValue: (), context: ()),
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
    /// validated and checked: the executor runs the parsed document (no
    /// second parse or validation).
    static func answer(_ parsed: ParsedRequest) async throws -> Response {
        let result = try await execute(
            schema: GraphQLAPI.schema, documentAST: parsed.document, rootValue: (), context: (),
            variableValues: parsed.variables.mapValues(\.map), operationName: parsed.operation.name?.value
        )
        let data = try GraphQLJSONEncoder().encode(result)
        return GraphQLResponse.json(String(decoding: data, as: UTF8.self), status: .ok)
    }
}
