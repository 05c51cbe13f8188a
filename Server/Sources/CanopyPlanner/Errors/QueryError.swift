/// A fault found while reading or planning a request: the document, its
/// variables, its arguments, or a plan's answer (a zone that does not
/// exist). One type for the module, carrying the API's ``ErrorCode``.
public struct QueryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A line and column in the document, both 1-based, counted in characters.
    public struct Location: Sendable, Equatable, Codable {
        public var line: Int
        public var column: Int
        public init(line: Int, column: Int) {
            self.line = line
            self.column = column
        }
    }

    public var code: ErrorCode
    public var message: String
    public var locations: [Location]
    /// The response path of the field the error belongs to, if any.
    public var path: [String]

    public init(_ code: ErrorCode, _ message: String, locations: [Location] = [], path: [String] = []) {
        self.code = code
        self.message = message
        self.locations = locations
        self.path = path
    }

    public var description: String { message }
}
