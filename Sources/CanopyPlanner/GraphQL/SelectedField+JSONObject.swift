extension SelectedField {
    /// The JSON object for this field's selection when the values are known
    /// in Swift rather than built in SQL: each child under its response key,
    /// with the JSON text `value` gives for it (`__typename`: `typeName`).
    func jsonObject(typeName: String, _ value: (SelectedField) throws -> String) rethrows -> String {
        var parts: [String] = []
        for child in children {
            let key = JSONValue.string(child.responseKey).jsonText
            let json = child.name == "__typename" ? JSONValue.string(typeName).jsonText : try value(child)
            parts.append("\(key):\(json)")
        }
        return "{\(parts.joined(separator: ","))}"
    }
}
