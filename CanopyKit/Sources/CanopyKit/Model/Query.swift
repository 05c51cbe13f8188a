import Foundation

/// Which records to fetch (CKQuery): a record type, a predicate in
/// NSPredicate's format (docs/API.md §5), and an order.
public struct Query: Sendable {
    /// The most records one page holds (the server's `limit` bound).
    public static let maximumResults = 400

    /// A sort key (NSSortDescriptor(key:ascending:)); `recordName` breaks ties.
    public struct SortDescriptor: Sendable {
        public let key: String
        public let ascending: Bool

        public init(key: String, ascending: Bool = true) {
            self.key = key
            self.ascending = ascending
        }
    }

    /// Where a page ended (CKQueryOperation.Cursor): pass it back for the next.
    public struct Cursor: Sendable {
        let value: String
        let query: Query
        let zoneID: RecordZone.ID
    }

    public let recordType: String
    public let predicate: Predicate
    public var sortDescriptors: [SortDescriptor] = []

    public init(recordType: String, predicate: Predicate = .all) {
        self.recordType = recordType
        self.predicate = predicate
    }
}

/// A filter in NSPredicate's format (`NSPredicate(format:)`, which Linux's
/// Foundation lacks): `%@` placeholders are bound in order from the
/// arguments, `$name` ones from the substitution variables, never spliced.
public struct Predicate: Sendable {
    public let format: String
    let arguments: [FieldValue]
    let variables: [String: FieldValue]

    /// Every record (`TRUEPREDICATE`).
    public static let all = Predicate(format: "TRUEPREDICATE")

    public init(format: String, _ arguments: any RecordValue...) {
        self.format = format
        self.arguments = arguments.map(\.fieldValue)
        self.variables = [:]
    }

    public init(format: String, argumentArray: [any RecordValue]) {
        self.format = format
        self.arguments = argumentArray.map(\.fieldValue)
        self.variables = [:]
    }

    /// A predicate with `$name` placeholders (NSPredicate.withSubstitutionVariables).
    public init(format: String, substitutionVariables: [String: any RecordValue]) {
        self.format = format
        self.arguments = []
        self.variables = substitutionVariables.mapValues(\.fieldValue)
    }

    var isTrue: Bool { format.trimmingCharacters(in: .whitespaces).uppercased() == "TRUEPREDICATE" }

    func argumentsJSON(in zoneID: RecordZone.ID) throws -> JSON {
        if !variables.isEmpty { return .object(try variables.mapValues { try $0.json(in: zoneID) }) }
        if !arguments.isEmpty { return .array(try arguments.map { try $0.json(in: zoneID) }) }
        return .null
    }
}

/// A position in a change feed (CKServerChangeToken): opaque, persist it
/// with `Codable` and pass it back to fetch only what changed since.
public struct ServerChangeToken: Sendable, Hashable, Codable {
    public let value: String

    public init(_ value: String) {
        self.value = value
    }
}
