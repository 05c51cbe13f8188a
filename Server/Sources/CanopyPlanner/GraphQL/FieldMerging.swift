import GraphQL

/// The GraphQL specification's "field selection merging" (5.3.2): fields
/// that answer under the same response key in one object must be the same
/// field with the same arguments, or the answer could only hold one of
/// them. GraphQLSwift 4.3 leaves that rule out, and Canopy merged such
/// fields, silently answering one (issue 64); this refuses them, naming
/// both, before the library validates. Fields under inline fragments or
/// spreads of another type condition are compared among themselves only
/// (the specification lets fields of different object types differ). It
/// runs after the library's validation, which refuses fragment cycles.
enum FieldMerging {
    static func check(_ operation: OperationDefinition, fragments: [String: FragmentDefinition], locator: SourceLocator) throws {
        try check([Group(set: operation.selectionSet, condition: "", visiting: [])], fragments: fragments, locator: locator)
    }

    /// A selection set answered into the object being checked, the type
    /// condition it is under, and the fragments spread on the way to it
    /// (a fragment spread inside itself is not followed again: found by
    /// fuzzing, a cycle through a nested field recursed without end).
    private struct Group {
        var set: SelectionSet
        var condition: String
        var visiting: Set<String>
    }

    /// Selection sets answered into one object (the sub-selections of the
    /// fields merged under one key).
    private static func check(_ groups: [Group], fragments: [String: FragmentDefinition], locator: SourceLocator) throws {
        var order: [String] = []
        var byKey: [String: [(field: Field, visiting: Set<String>)]] = [:]
        func collect(_ set: SelectionSet, condition: String, visiting: Set<String>) {
            for selection in set.selections {
                switch selection {
                case let field as Field:
                    let key = condition + "\u{0}" + (field.alias?.value ?? field.name.value)
                    if byKey[key] == nil { order.append(key) }
                    byKey[key, default: []].append((field, visiting))
                case let inline as InlineFragment:
                    collect(inline.selectionSet, condition: inline.typeCondition?.name.value ?? condition, visiting: visiting)
                case let spread as FragmentSpread:
                    let name = spread.name.value
                    guard !visiting.contains(name), let fragment = fragments[name] else { continue }
                    collect(fragment.selectionSet, condition: fragment.typeCondition.name.value, visiting: visiting.union([name]))
                default:
                    continue
                }
            }
        }
        for group in groups { collect(group.set, condition: group.condition, visiting: group.visiting) }
        for key in order {
            let fields = byKey[key] ?? []
            let first = fields[0].field
            let responseKey = first.alias?.value ?? first.name.value
            let firstArguments = fields.count > 1 ? arguments(of: first) : [:]
            for (other, _) in fields.dropFirst() {
                let locations = [first, other].compactMap { $0.loc.map { locator.location(ofUTF8Offset: $0.start) } }
                if other.name.value != first.name.value {
                    throw QueryError(.badRequest, "fields \"\(responseKey)\" conflict because \(first.name.value) and \(other.name.value) are different fields; give one another alias", locations: locations)
                }
                if arguments(of: other) != firstArguments {
                    throw QueryError(.badRequest, "fields \"\(responseKey)\" conflict because they have differing arguments; give one another alias", locations: locations)
                }
            }
            let children = fields.compactMap { entry in entry.field.selectionSet.map { Group(set: $0, condition: "", visiting: entry.visiting) } }
            if !children.isEmpty {
                try check(children, fragments: fragments, locator: locator)
            }
        }
    }

    /// A field's arguments as text, by name: what two same-key fields must agree on.
    private static func arguments(of field: Field) -> [String: String] {
        var result: [String: String] = [:]
        for argument in field.arguments { result[argument.name.value] = text(argument.value) }
        return result
    }

    private static func text(_ value: any Value) -> String {
        switch value {
        case let variable as Variable: return "$" + variable.name.value
        case let int as IntValue: return int.value
        case let float as FloatValue: return float.value
        case let string as StringValue: return "\"" + string.value + "\""
        case let boolean as BooleanValue: return boolean.value ? "true" : "false"
        case is NullValue: return "null"
        case let enumValue as EnumValue: return enumValue.value
        case let list as ListValue: return "[" + list.values.map(text).joined(separator: ",") + "]"
        case let object as ObjectValue:
            return "{" + object.fields.map { "\($0.name.value):\(text($0.value))" }.sorted().joined(separator: ",") + "}"
        default: return "?"
        }
    }
}
