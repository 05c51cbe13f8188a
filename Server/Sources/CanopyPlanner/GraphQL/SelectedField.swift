import GraphQL

/// A field as the response will carry it: under its response key (alias or
/// name), with fragments flattened and @skip/@include decided. Plans are
/// built from these, so a field nobody asked for is never computed.
public struct SelectedField: @unchecked Sendable {
    public let responseKey: String
    public let name: String
    public let field: Field
    public let children: [SelectedField]

    static func collect(_ set: SelectionSet, in request: ParsedRequest) throws -> [SelectedField] {
        var result: [SelectedField] = []
        var index: [String: Int] = [:]
        func add(_ set: SelectionSet, visiting: Set<String>) throws {
            for selection in set.selections {
                switch selection {
                case let field as Field:
                    guard try included(field.directives, request) else { continue }
                    let key = field.alias?.value ?? field.name.value
                    let children = try field.selectionSet.map { try collect($0, in: request) } ?? []
                    if let existing = index[key] {
                        // Same key twice (validation made them compatible): merge sub-selections.
                        let merged = result[existing]
                        result[existing] = SelectedField(responseKey: key, name: merged.name, field: merged.field, children: merged.children + children.filter { child in !merged.children.contains { $0.responseKey == child.responseKey } })
                    } else {
                        index[key] = result.count
                        result.append(SelectedField(responseKey: key, name: field.name.value, field: field, children: children))
                    }
                case let inline as InlineFragment:
                    guard try included(inline.directives, request) else { continue }
                    try add(inline.selectionSet, visiting: visiting)
                case let spread as FragmentSpread:
                    guard try included(spread.directives, request) else { continue }
                    let name = spread.name.value
                    guard !visiting.contains(name), let fragment = request.fragments[name] else { continue }
                    try add(fragment.selectionSet, visiting: visiting.union([name]))
                default:
                    continue
                }
            }
        }
        try add(set, visiting: [])
        return result
    }

    static func included(_ directives: [Directive], _ request: ParsedRequest) throws -> Bool {
        for directive in directives where directive.name.value == "skip" || directive.name.value == "include" {
            guard let argument = directive.arguments.first(where: { $0.name.value == "if" }) else { continue }
            let value: Bool
            switch argument.value {
            case let literal as BooleanValue:
                value = literal.value
            case let variable as Variable:
                guard case .bool(let bound)? = try request.variables[variable.name.value] ?? ValueConverter(request: request).variableDefault(variable) else {
                    throw QueryError(.invalidArguments, "variable $\(variable.name.value) of @\(directive.name.value) must be a Boolean", locations: request.location(of: directive))
                }
                value = bound
            default:
                value = true
            }
            if directive.name.value == "skip" && value { return false }
            if directive.name.value == "include" && !value { return false }
        }
        return true
    }
}
