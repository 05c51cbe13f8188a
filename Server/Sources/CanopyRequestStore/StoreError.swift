/// Every failure the store reports: one type for the module, so callers map
/// codes (not messages) to what they show. Messages say what went wrong and
/// what to do; they never carry SQL text.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is, for callers that react to it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: String, Sendable {
            case invalidConfiguration
            case postgresNotInstalled
            case clusterFailed
            case databaseUnavailable
            case commitOutcomeUnknown
            case migrationFailed
            case migrationEdited
            case migrationMissing
            case invalidInput
            case notFound
            case alreadyExists
            case notAuthenticated
            case query
        }
        let base: Base
        public var description: String { base.rawValue }

        public static let invalidConfiguration = Code(base: .invalidConfiguration)
        public static let postgresNotInstalled = Code(base: .postgresNotInstalled)
        public static let clusterFailed = Code(base: .clusterFailed)
        public static let databaseUnavailable = Code(base: .databaseUnavailable)
        /// The database went away after a write's COMMIT was sent and before
        /// it answered: the write may or may not have been applied.
        public static let commitOutcomeUnknown = Code(base: .commitOutcomeUnknown)
        public static let migrationFailed = Code(base: .migrationFailed)
        public static let migrationEdited = Code(base: .migrationEdited)
        public static let migrationMissing = Code(base: .migrationMissing)
        public static let invalidInput = Code(base: .invalidInput)
        public static let notFound = Code(base: .notFound)
        public static let alreadyExists = Code(base: .alreadyExists)
        public static let notAuthenticated = Code(base: .notAuthenticated)
        public static let query = Code(base: .query)
    }

    public let code: Code
    /// A message for people: what was wrong and where.
    public let message: String
    /// The SQLSTATE, when the failure came from PostgreSQL; for mapping only.
    public let sqlState: String?
    /// The underlying error, for logs (`String(reflecting:)`), never for responses.
    public let underlying: (any Error)?

    public init(_ code: Code, _ message: String, sqlState: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.underlying = underlying
    }

    public var description: String { message }
}

extension StoreError: CustomDebugStringConvertible {
    public var debugDescription: String {
        var text = "StoreError(\(code)): \(message)"
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        if let underlying { text += " underlying: \(String(reflecting: underlying))" }
        return text
    }
}
