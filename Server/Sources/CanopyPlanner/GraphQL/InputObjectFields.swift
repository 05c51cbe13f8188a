import GraphQL

/// The part of GraphQL's input coercion that Canopy's plans do not do on
/// their own: an input object's keys must be fields its type declares. The
/// specification says coercing an object with an undeclared field is an
/// error; before issue 48 a `RecordInput` carrying `created: {…}` was
/// accepted and the key dropped, as a literal (GraphQLSwift 4.3's
/// validation misses it) and as a variable. Now both are refused with the
/// path of the key: `save[0].created` for a literal (checked once per
/// document, cached with it), `$save[0].created` for a variable (checked
/// per request).
enum InputObjectFields {
    /// Every input object type of the schema with its declared fields, read
    /// once: the schema's `fields()` builds its map anew on each call, and
    /// variables are checked on every request.
    static let inputObjects: [String: (type: GraphQLInputObjectType, fields: InputObjectFieldMap)] = {
        var result: [String: (type: GraphQLInputObjectType, fields: InputObjectFieldMap)] = [:]
        for case let type as GraphQLInputObjectType in GraphQLAPI.schema.typeMap.values {
            if let fields = try? type.fields() { result[type.name] = (type, fields) }
        }
        return result
    }()

    static func check(_ variables: [String: JSONValue], of operation: OperationDefinition, locate: (any Node) -> [QueryError.Location]) throws {
        for definition in operation.variableDefinitions {
            let name = definition.variable.name.value
            guard let value = variables[name] else { continue }
            do {
                guard let type = schemaType(definition.type) else { continue }
                try check(value, against: type, path: "$\(name)")
            } catch var error as QueryError {
                error.locations = locate(definition)
                throw error
            }
        }
    }

    /// The schema's type for a type the document writes (`[RecordInput!]`).
    static func schemaType(_ type: any Type) -> (any GraphQLType)? {
        switch type {
        case let nonNull as NonNullType: schemaType(nonNull.type).flatMap { ($0 as? any GraphQLNullableType).map(GraphQLNonNull.init) }
        case let list as ListType: schemaType(list.type).map(GraphQLList.init)
        case let named as NamedType: GraphQLAPI.schema.getType(name: named.name.value)
        default: nil
        }
    }

    /// Against a type of the schema (an input object's field).
    static func check(_ value: JSONValue, against type: any GraphQLType, path: String) throws {
        switch type {
        case let nonNull as GraphQLNonNull:
            try check(value, against: nonNull.ofType, path: path)
        case let list as GraphQLList:
            try checkItems(value, path: path) { try check($0, against: list.ofType, path: $1) }
        case let named as any GraphQLNamedType:
            try check(value, named: named.name, path: path)
        default:
            return
        }
    }

    /// A list's items one by one; a single value stands for a list of one.
    static func checkItems(_ value: JSONValue, path: String, _ each: (JSONValue, String) throws -> Void) throws {
        if case .array(let items) = value {
            for (index, item) in items.enumerated() { try each(item, "\(path)[\(index)]") }
        } else {
            try each(value, path)
        }
    }

    static func check(_ value: JSONValue, named name: String, path: String) throws {
        guard case .object(let members) = value, let (type, declared) = inputObjects[name] else { return }
        for key in members.keys.sorted() {
            guard let field = declared[key] else {
                throw QueryError(.badRequest, "variable \(path): field \"\(JSONValue.printable(key))\" is not defined by type \(type.name) (its fields: \(declared.keys.joined(separator: ", ")))")
            }
            try check(members[key]!, against: field.type, path: "\(path).\(key)")
        }
    }
}

extension InputObjectFields {
    /// Every argument literal of the operation (and of the fragments it
    /// spreads), against the argument's declared type.
    static func checkLiterals(of operation: OperationDefinition, fragments: [String: FragmentDefinition], locate: (any Node) -> [QueryError.Location]) throws {
        let schema = GraphQLAPI.schema
        let root: GraphQLObjectType? = switch operation.operation {
        case .query: schema.queryType
        case .mutation: schema.mutationType
        case .subscription: schema.subscriptionType
        }
        var visited: Set<String> = []
        func walk(_ set: SelectionSet, on parentName: String?) throws {
            let parentFields: GraphQLFieldMap? = parentName.flatMap { name in
                switch schema.getType(name: name) {
                case let object as GraphQLObjectType: try? object.fields()
                case let interface as GraphQLInterfaceType: try? interface.fields()
                default: nil
                }
            }
            for selection in set.selections {
                switch selection {
                case let field as Field:
                    let definition = parentFields?[field.name.value]
                    for argument in field.arguments {
                        guard let type = definition?.args[argument.name.value]?.type else { continue }
                        do {
                            try checkLiteral(argument.value, against: type, path: argument.name.value)
                        } catch var error as QueryError {
                            error.locations = locate(argument.value)
                            throw error
                        }
                    }
                    if let child = field.selectionSet, let type = definition?.type {
                        try walk(child, on: namedTypeName(type))
                    }
                case let inline as InlineFragment:
                    try walk(inline.selectionSet, on: inline.typeCondition?.name.value ?? parentName)
                case let spread as FragmentSpread:
                    let name = spread.name.value
                    guard visited.insert(name).inserted, let fragment = fragments[name] else { continue }
                    try walk(fragment.selectionSet, on: fragment.typeCondition.name.value)
                default:
                    continue
                }
            }
        }
        try walk(operation.selectionSet, on: root?.name)
    }

    static func namedTypeName(_ type: any GraphQLType) -> String? {
        switch type {
        case let nonNull as GraphQLNonNull: namedTypeName(nonNull.ofType)
        case let list as GraphQLList: namedTypeName(list.ofType)
        case let named as any GraphQLNamedType: named.name
        default: nil
        }
    }

    /// A literal against a schema type: object literals' keys declared.
    static func checkLiteral(_ value: any Value, against type: any GraphQLType, path: String) throws {
        switch type {
        case let nonNull as GraphQLNonNull:
            try checkLiteral(value, against: nonNull.ofType, path: path)
        case let list as GraphQLList:
            if let items = value as? ListValue {
                for (index, item) in items.values.enumerated() { try checkLiteral(item, against: list.ofType, path: "\(path)[\(index)]") }
            } else {
                try checkLiteral(value, against: list.ofType, path: path)
            }
        case let named as any GraphQLNamedType:
            guard let object = value as? ObjectValue, let (inputType, declared) = inputObjects[named.name] else { return }
            for member in object.fields {
                let key = member.name.value
                guard let field = declared[key] else {
                    throw QueryError(.badRequest, "\(path): field \"\(key)\" is not defined by type \(inputType.name) (its fields: \(declared.keys.joined(separator: ", ")))")
                }
                try checkLiteral(member.value, against: field.type, path: "\(path).\(key)")
            }
        default:
            return
        }
    }
}
