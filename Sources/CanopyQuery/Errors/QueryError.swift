/// A fault in what the client sent: the document, its variables or its
/// arguments. One type for the module; the gateway maps `code` to the API's
/// error codes in one place.
public struct QueryError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: String, Sendable {
            case badRequest, invalidArguments, limitExceeded, notImplemented, changeTokenExpired
        }
        let base: Base
        public var description: String { base.rawValue }

        /// The document does not parse or validate (HTTP 400).
        public static let badRequest = Code(base: .badRequest)
        /// The document is valid but an argument is not (HTTP 200, in `errors`).
        public static let invalidArguments = Code(base: .invalidArguments)
        /// A limit was exceeded; the message names it.
        public static let limitExceeded = Code(base: .limitExceeded)
        /// A change token from before the tombstones it needs were purged,
        /// or for a feed that no longer exists: start again from null.
        public static let changeTokenExpired = Code(base: .changeTokenExpired)
        /// A field of the contract this build does not answer yet.
        public static let notImplemented = Code(base: .notImplemented)
    }

    /// A line and column in the document, both 1-based, counted in characters.
    public struct Location: Sendable, Equatable, Codable {
        public var line: Int
        public var column: Int
        public init(line: Int, column: Int) {
            self.line = line
            self.column = column
        }
    }

    public var code: Code
    public var message: String
    public var locations: [Location]
    /// The response path of the field the error belongs to, if any.
    public var path: [String]

    public init(_ code: Code, _ message: String, locations: [Location] = [], path: [String] = []) {
        self.code = code
        self.message = message
        self.locations = locations
        self.path = path
    }

    public var description: String { message }
}
