import GraphQL

// GraphQLSwift 4.3.0 answers `__InputValue.isDeprecated` with null (its
// argument and input-field definitions have no such property), which breaks
// clients that ask for input-value deprecation in their introspection query,
// such as Python's gql. Its default resolver reads `KeySubscriptable` values
// first, so these conformances answer `isDeprecated` along with the other
// fields the default resolver reads from them.

extension GraphQLArgumentDefinition: @retroactive KeySubscriptable {
    public subscript(key: String) -> (any Sendable)? {
        inputValueField(key, name: name, type: type, defaultValue: defaultValue, description: description, deprecationReason: deprecationReason)
    }
}

extension InputObjectFieldDefinition: @retroactive KeySubscriptable {
    public subscript(key: String) -> (any Sendable)? {
        inputValueField(key, name: name, type: type, defaultValue: defaultValue, description: description, deprecationReason: deprecationReason)
    }
}

/// The `__InputValue` field `key` of an argument or input field.
private func inputValueField(
    _ key: String, name: String, type: any GraphQLInputType, defaultValue: Map?,
    description: String?, deprecationReason: String?
) -> (any Sendable)? {
    switch key {
    case "name": return name
    case "type": return type
    case "defaultValue": return defaultValue
    case "description": return description
    case "deprecationReason": return deprecationReason
    case "isDeprecated": return deprecationReason != nil
    default: return nil
    }
}
