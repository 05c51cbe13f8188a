extension SelectedField {
    /// The JSON object for this field's selection when the values are known
    /// in Swift rather than built in SQL: each child under its response key,
    /// with the JSON text `value` gives for it (`__typename`: `typeName`).
    func jsonObject(typeName: String, _ value: (SelectedField) throws -> String) rethrows -> String {
        // One string, appended to: a page of records is tens of kilobytes,
        // and interpolating and joining parts copied it three times over.
        var parts: [(key: String, json: String)] = []
        parts.reserveCapacity(children.count)
        var size = 2
        for child in children {
            let key = JSONValue.string(child.responseKey).jsonText
            let json = child.name == "__typename" ? JSONValue.string(typeName).jsonText : try value(child)
            size += key.utf8.count + json.utf8.count + 2
            parts.append((key, json))
        }
        var out = "{"
        out.reserveCapacity(size)
        for (index, part) in parts.enumerated() {
            if index > 0 { out.append(",") }
            out.append(part.key)
            out.append(":")
            out.append(part.json)
        }
        out.append("}")
        return out
    }
}
