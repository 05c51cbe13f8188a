import GraphQL

/// A field's arguments as values: literals and variables resolved, with
/// the location of each for errors. Plans read typed values from it and
/// say, with a location, when one is wrong.
public struct Arguments: @unchecked Sendable {
    let field: Field
    let request: ParsedRequest
    /// The field's arguments, their literals converted once per document.
    private let slots: [String: DocumentMemo.ArgumentSlot]

    init(_ field: SelectedField, in request: ParsedRequest) {
        self.field = field.field
        self.request = request
        self.slots = request.memo.arguments(of: field.field, in: request)
    }

    /// The value of an argument, nil when absent (or an absent variable).
    /// A string anywhere in it holding U+0000 is refused here, naming the
    /// argument and the place inside it: PostgreSQL's text and JSONB cannot
    /// hold that character (issue 48).
    public func value(_ name: String) throws -> JSONValue? {
        guard let slot = slots[name] else { return nil }
        if let literal = slot.literal { return try literal.get() }
        let value = try convert(slot.node)
        if let value, let place = value.placeOfNUL() {
            throw invalid(name, "\(name)\(place) holds the character U+0000 (NUL), which no text may hold")
        }
        return value
    }

    public func location(_ name: String) -> [QueryError.Location] {
        slots[name]?.location ?? request.location(of: field)
    }

    func invalid(_ name: String, _ message: String) -> QueryError {
        QueryError(.invalidArguments, message, locations: location(name))
    }

    public func string(_ name: String) throws -> String? {
        switch try value(name) {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw invalid(name, "\(name) must be a string, not \(other.typeName)")
        }
    }

    public func requiredString(_ name: String) throws -> String {
        guard let text = try string(name) else { throw invalid(name, "\(name) is required") }
        return text
    }

    public func int(_ name: String, default fallback: Int) throws -> Int {
        switch try value(name) {
        case nil, .null?: return fallback
        case .int(let number)?: return Int(number)
        // A variable written 100.0 (JavaScript and Python clients do): a whole number is an integer here.
        case .double(let number)? where number.rounded(.towardZero) == number && abs(number) <= 9_007_199_254_740_992:
            return Int(number)
        case let other?: throw invalid(name, "\(name) must be an integer, not \(other.typeName)")
        }
    }

    /// A page size: `limit`, at least 1, at most `maximum` (LIMIT_EXCEEDED above).
    func limit(default fallback: Int, maximum: Int) throws -> Int {
        let limit = try int("limit", default: fallback)
        guard limit >= 1 else { throw invalid("limit", "limit must be at least 1") }
        guard limit <= maximum else {
            throw QueryError(.limitExceeded, "limit may be at most \(maximum), got \(limit)", locations: location("limit"))
        }
        return limit
    }

    public func bool(_ name: String, default fallback: Bool) throws -> Bool {
        switch try value(name) {
        case nil, .null?: return fallback
        case .bool(let flag)?: return flag
        case let other?: throw invalid(name, "\(name) must be a boolean, not \(other.typeName)")
        }
    }

    public func strings(_ name: String) throws -> [String] {
        switch try value(name) {
        case nil, .null?: return []
        case .array(let items)?:
            return try items.map {
                guard case .string(let text) = $0 else { throw invalid(name, "\(name) must be a list of strings") }
                return text
            }
        case .string(let text)?: return [text]  // GraphQL input coercion of a single item
        case let other?: throw invalid(name, "\(name) must be a list of strings, not \(other.typeName)")
        }
    }

    func convert(_ value: any Value) throws -> JSONValue? {
        try ValueConverter(request: request).convert(value)
    }
}

extension ParsedRequest {
    /// The arguments of a selected field.
    public func arguments(of field: SelectedField) -> Arguments {
        Arguments(field, in: self)
    }
}

/// Turns GraphQL literal values and variables into `JSONValue`s.
struct ValueConverter: @unchecked Sendable {
    let request: ParsedRequest

    func convert(_ value: any Value) throws -> JSONValue? {
        switch value {
        case let variable as Variable:
            let name = variable.name.value
            if let bound = request.variables[name] { return bound }
            let definition = request.operation.variableDefinitions.first { $0.variable.name.value == name }
            if let fallback = definition?.defaultValue { return try convert(fallback) }
            if definition?.type is NonNullType {
                throw QueryError(.badRequest, "variable $\(name) of type \(typeName(definition!.type)) was not provided", locations: request.location(of: variable))
            }
            return nil
        case let int as IntValue:
            guard let number = Int64(int.value) else {
                throw QueryError(.invalidArguments, "\(int.value) does not fit in 64 bits", locations: request.location(of: int))
            }
            return .int(number)
        case let float as FloatValue:
            return .double(Double(float.value) ?? 0)
        case let string as StringValue:
            return .string(string.value)
        case let bool as BooleanValue:
            return .bool(bool.value)
        case is NullValue:
            return .null
        case let enumValue as EnumValue:
            return .string(enumValue.value)
        case let list as ListValue:
            return .array(try list.values.map { try convert($0) ?? .null })
        case let object as ObjectValue:
            var result: [String: JSONValue] = [:]
            for field in object.fields {
                if let converted = try convert(field.value) { result[field.name.value] = converted }
            }
            return .object(result)
        default:
            return nil
        }
    }

    func typeName(_ type: any Type) -> String {
        switch type {
        case let named as NamedType: return named.name.value
        case let list as ListType: return "[\(typeName(list.type))]"
        case let nonNull as NonNullType: return "\(typeName(nonNull.type))!"
        default: return "?"
        }
    }

    /// A variable's default value from its definition, if it has one.
    func variableDefault(_ variable: Variable) throws -> JSONValue? {
        let definition = request.operation.variableDefinitions.first { $0.variable.name.value == variable.name.value }
        guard let fallback = definition?.defaultValue else { return nil }
        return try convert(fallback)
    }
}
