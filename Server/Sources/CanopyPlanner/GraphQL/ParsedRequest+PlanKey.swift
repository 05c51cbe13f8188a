import GraphQL

extension ParsedRequest {
    /// The values of the variables a root field's plan may depend on other
    /// than through its own arguments (a nested field's arguments, an
    /// `@include`), as text: part of a plan cache's key, beside the shape
    /// the plan's check gives for its arguments. Empty when every variable
    /// feeds the field's arguments (the common case).
    public func variablesBeyondArguments(of field: SelectedField) -> String {
        guard !operation.variableDefinitions.isEmpty else { return "" }
        var text = ""
        for name in memo.variables(beyondArgumentsOf: field.field, in: operation) {
            text += name
            text += variables[name].map { "=" + $0.jsonText } ?? "?"
            text += "\u{1F}"
        }
        return text
    }
}
