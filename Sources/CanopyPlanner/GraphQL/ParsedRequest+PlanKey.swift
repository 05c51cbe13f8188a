import GraphQL

extension ParsedRequest {
    /// The values of the variables a root field's plan may depend on other
    /// than through its own arguments (a nested field's arguments, an
    /// `@include`), as text: part of a plan cache's key, beside the shape
    /// the plan's check gives for its arguments. Empty when every variable
    /// feeds the field's arguments (the common case).
    public func variablesBeyondArguments(of field: SelectedField) -> String {
        let definitions = operation.variableDefinitions
        guard !definitions.isEmpty else { return "" }
        var used: Set<String> = []
        for argument in field.field.arguments { Self.collectVariables(argument.value, into: &used) }
        var text = ""
        for definition in definitions {
            let name = definition.variable.name.value
            guard !used.contains(name) else { continue }
            text += name
            text += variables[name].map { "=" + $0.jsonText } ?? "?"
            text += "\u{1F}"
        }
        return text
    }

    private static func collectVariables(_ value: any Value, into names: inout Set<String>) {
        switch value {
        case let variable as Variable: names.insert(variable.name.value)
        case let list as ListValue: for item in list.values { collectVariables(item, into: &names) }
        case let object as ObjectValue: for field in object.fields { collectVariables(field.value, into: &names) }
        default: break
        }
    }
}
