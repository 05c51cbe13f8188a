import CanopyPlanner

/// A Web Services request's JSON body with its members read as the
/// reference types them (`resultsLimit` a whole number, `syncToken` a
/// string, `desiredKeys` a list of field names): a wrong type is refused
/// naming the member, not ignored.
public struct WebServicesRequestBody: Sendable {
    public let members: [String: JSONValue]

    public init(_ members: [String: JSONValue]) {
        self.members = members
    }

    public subscript(_ key: String) -> JSONValue? { members[key] }

    /// `numbersAsStrings`: INT64 and DOUBLE values answered as strings.
    public var numbersAsStrings: Bool { members["numbersAsStrings"] == .bool(true) }

    /// A whole number (`resultsLimit`), checked; nil when absent or null.
    public func integer(_ key: String) throws(QueryError) -> Int64? {
        switch members[key] {
        case nil, .null?: return nil
        case .int(let number)?: return number
        case let other?: throw QueryError(.badRequest, "\(key) must be a whole number, not \(other.typeName)")
        }
    }

    /// A string (`continuationMarker`, `syncToken`) of the body or of one
    /// of its dictionaries, checked; nil when absent or null.
    public func string(_ key: String, in dictionary: [String: JSONValue]? = nil) throws(QueryError) -> String? {
        try Self.string((dictionary ?? members)[key], at: key)
    }

    /// A string value at `place` in the request, checked; nil when absent or null.
    public static func string(_ value: JSONValue?, at place: String) throws(QueryError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw QueryError(.badRequest, "\(place) must be a string, not \(other.typeName)")
        }
    }

    /// The body's `desiredKeys`, or `value` where an item has its own:
    /// the field names, or nil for every field.
    public func desiredKeys(_ value: JSONValue? = nil) throws(QueryError) -> [String]? {
        try Self.desiredKeys(value ?? members["desiredKeys"])
    }

    /// A `desiredKeys` value, checked: a list of field names, or null
    /// (every field).
    public static func desiredKeys(_ value: JSONValue?) throws(QueryError) -> [String]? {
        switch value {
        case nil, .null?: return nil
        case .array(let keys)?:
            var names: [String] = []
            for key in keys {
                guard case .string(let name) = key, Names.isFieldName(name) else {
                    throw QueryError(.badRequest, "desiredKeys must be a list of field names")
                }
                names.append(name)
            }
            return names
        case let other?: throw QueryError(.badRequest, "desiredKeys must be a list of field names, not \(other.typeName)")
        }
    }
}
