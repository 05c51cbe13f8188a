import GraphQL
import Synchronization

/// What a parsed document's fields' arguments are, worked out once per
/// parse and shared by every request of the document (issue 51): each
/// argument's literal value converted once, its location, and which
/// variables a root field's arguments leave out. Requests send the same
/// few documents with new variables; before, each request looked its
/// arguments up in the syntax tree and converted its literals anew (a
/// records request's largest cost in the planner). Held by the
/// ``ParsedRequest`` the cache of parsed documents keeps, so bounded by it.
final class DocumentMemo: Sendable {
    /// One argument of one field in the document.
    struct ArgumentSlot: @unchecked Sendable {
        /// Its syntax (values of the syntax tree never change).
        let node: any Value
        /// Its value, converted once, when it holds no variable (or the
        /// error converting it gives, thrown when it is read).
        let literal: Result<JSONValue?, any Error>?
        let location: [QueryError.Location]
    }

    /// By the field's offset in the document's text.
    private let fieldArguments = Mutex<[Int: [String: ArgumentSlot]]>([:])
    private let namesBeyondArguments = Mutex<[Int: [String]]>([:])
    /// The operation's root fields, by the values of its Boolean variables
    /// (the only ones `@skip` and `@include` can read); a few at most.
    private let rootFields = Mutex<[String: [SelectedField]]>([:])
    static let rootFieldVariants = 16

    init() {}

    /// `field`'s arguments by name (the first of a name, as a lookup in the tree finds).
    func arguments(of field: Field, in request: ParsedRequest) -> [String: ArgumentSlot] {
        guard let key = field.loc?.start else { return Self.slots(of: field, in: request) }
        if let known = fieldArguments.withLock({ $0[key] }) { return known }
        let slots = Self.slots(of: field, in: request)
        fieldArguments.withLock { $0[key] = slots }
        return slots
    }

    private static func slots(of field: Field, in request: ParsedRequest) -> [String: ArgumentSlot] {
        var slots: [String: ArgumentSlot] = [:]
        for argument in field.arguments where slots[argument.name.value] == nil {
            let name = argument.name.value
            let location = request.location(of: argument.value)
            var literal: Result<JSONValue?, any Error>?
            if !containsVariable(argument.value) {
                literal = Result {
                    let value = try ValueConverter(request: request).convert(argument.value)
                    if let value, let place = value.placeOfNUL() {
                        throw QueryError(.invalidArguments, "\(name)\(place) holds the character U+0000 (NUL), which no text may hold", locations: location)
                    }
                    return value
                }
            }
            slots[name] = ArgumentSlot(node: argument.value, literal: literal, location: location)
        }
        return slots
    }

    /// The variables of the operation that `field`'s arguments do not use, in order.
    func variables(beyondArgumentsOf field: Field, in operation: OperationDefinition) -> [String] {
        let key = field.loc?.start
        if let key, let known = namesBeyondArguments.withLock({ $0[key] }) { return known }
        var used: Set<String> = []
        for argument in field.arguments { Self.collectVariables(argument.value, into: &used) }
        let names = operation.variableDefinitions.map(\.variable.name.value).filter { !used.contains($0) }
        if let key { namesBeyondArguments.withLock { $0[key] = names } }
        return names
    }

    /// The operation's root fields (fragments spread, `@skip` and
    /// `@include` decided) for these variables, collected once for each
    /// value of its Boolean variables.
    func rootFields(of request: ParsedRequest, _ collect: () throws -> [SelectedField]) throws -> [SelectedField] {
        var key = ""
        for definition in request.operation.variableDefinitions where Self.isBoolean(definition.type) {
            let name = definition.variable.name.value
            key += request.variables[name].map { $0.jsonText } ?? "?"
            key += ","
        }
        if let known = rootFields.withLock({ $0[key] }) { return known }
        let fields = try collect()
        rootFields.withLock { known in
            if known.count < Self.rootFieldVariants { known[key] = fields }
        }
        return fields
    }

    private static func isBoolean(_ type: any Type) -> Bool {
        switch type {
        case let named as NamedType: return named.name.value == "Boolean"
        case let nonNull as NonNullType: return isBoolean(nonNull.type)
        default: return false
        }
    }

    static func containsVariable(_ value: any Value) -> Bool {
        var names: Set<String> = []
        collectVariables(value, into: &names)
        return !names.isEmpty
    }

    static func collectVariables(_ value: any Value, into names: inout Set<String>) {
        switch value {
        case let variable as Variable: names.insert(variable.name.value)
        case let list as ListValue: for item in list.values { collectVariables(item, into: &names) }
        case let object as ObjectValue: for field in object.fields { collectVariables(field.value, into: &names) }
        default: break
        }
    }
}
