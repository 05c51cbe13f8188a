import GraphQL
import OrderedCollections

extension JSONValue {
    /// The same value as GraphQLSwift's `Map`, for its executor (introspection).
    public var map: Map {
        switch self {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int(let value): return .number(Number(Int(value)))
        case .double(let value): return .number(Number(value))
        case .string(let value): return .string(value)
        case .array(let values): return .array(values.map(\.map))
        case .object(let values):
            var dictionary = OrderedDictionary<String, Map>()
            for (key, value) in values.sorted(by: { $0.key < $1.key }) { dictionary[key] = value.map }
            return .dictionary(dictionary)
        }
    }
}
