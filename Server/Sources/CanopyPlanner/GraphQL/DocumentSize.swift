import GraphQL

/// Bounds on everything in a GraphQL document that the library's
/// validation visits, counted over the whole document (every operation and
/// fragment, used or not: validation visits them all) before it runs
/// (issue 64). Validation reports each duplicate directive, argument,
/// input field or unused variable, and the library locates each error by
/// scanning the document from its start: a few hundred kilobytes of
/// repeated directives made tens of thousands of errors and took 40 s of
/// CPU. With these counts bounded, so is what validation can report.
struct DocumentSize {
    var definitions = 0
    var selections = 0
    var directives = 0
    var arguments = 0
    var variableDefinitions = 0
    /// Items of list literals and fields of object literals.
    var inputValues = 0

    /// The counts' limits; each is far above what a valid document needs.
    struct Limits: Sendable {
        var definitions = 100
        var selections: Int
        var directives = 100
        var arguments = 1_000
        var variableDefinitions = 100
        var inputValues = 10_000
    }

    /// What was over its limit, and the node where the count passed it.
    struct Exceeded: Error {
        var message: String
        var node: (any Node)?
    }

    /// One more of a kind; refused at `node` when that passes `limit`.
    private mutating func tally(_ count: WritableKeyPath<DocumentSize, Int>, _ limit: Int, at node: any Node,
                                _ message: @autoclosure () -> String) throws(Exceeded) {
        self[keyPath: count] += 1
        guard self[keyPath: count] <= limit else { throw Exceeded(message: message(), node: node) }
    }

    static func check(_ document: Document, limits: Limits) throws(Exceeded) {
        var size = DocumentSize()
        try size.count(document, limits)
    }

    private mutating func count(_ document: Document, _ limits: Limits) throws(Exceeded) {
        for definition in document.definitions {
            try tally(\.definitions, limits.definitions, at: definition, "the document has more than \(limits.definitions) definitions (operations and fragments)")
            switch definition {
            case let operation as OperationDefinition:
                for variable in operation.variableDefinitions {
                    try tally(\.variableDefinitions, limits.variableDefinitions, at: variable, "the document defines more than \(limits.variableDefinitions) variables")
                    if let value = variable.defaultValue { try count(value, limits) }
                    try count(variable.directives, limits)
                }
                try count(operation.directives, limits)
                try count(operation.selectionSet, limits)
            case let fragment as FragmentDefinition:
                try count(fragment.directives, limits)
                try count(fragment.selectionSet, limits)
            default:
                break
            }
        }
    }

    private mutating func count(_ set: SelectionSet, _ limits: Limits) throws(Exceeded) {
        for selection in set.selections {
            try tally(\.selections, limits.selections, at: selection, "the document has more than \(limits.selections) selections in all its operations and fragments")
            switch selection {
            case let field as Field:
                try count(field.arguments, limits)
                try count(field.directives, limits)
                if let child = field.selectionSet { try count(child, limits) }
            case let spread as FragmentSpread:
                try count(spread.directives, limits)
            case let inline as InlineFragment:
                try count(inline.directives, limits)
                try count(inline.selectionSet, limits)
            default:
                break
            }
        }
    }

    private mutating func count(_ directives: [Directive], _ limits: Limits) throws(Exceeded) {
        for directive in directives {
            try tally(\.directives, limits.directives, at: directive, "the document uses more than \(limits.directives) directives")
            try count(directive.arguments, limits)
        }
    }

    /// A field's or a directive's arguments, and their literal values.
    private mutating func count(_ arguments: [Argument], _ limits: Limits) throws(Exceeded) {
        for argument in arguments {
            try tally(\.arguments, limits.arguments, at: argument, "the document passes more than \(limits.arguments) arguments")
            try count(argument.value, limits)
        }
    }

    /// A literal value; its nesting is bounded by ``DocumentNesting``.
    private mutating func count(_ value: any Value, _ limits: Limits) throws(Exceeded) {
        switch value {
        case let list as ListValue:
            for item in list.values {
                try tally(\.inputValues, limits.inputValues, at: item, "the document's literal values hold more than \(limits.inputValues) list items and object fields")
                try count(item, limits)
            }
        case let object as ObjectValue:
            for field in object.fields {
                try tally(\.inputValues, limits.inputValues, at: field, "the document's literal values hold more than \(limits.inputValues) list items and object fields")
                try count(field.value, limits)
            }
        default:
            break
        }
    }
}
