/// A Web Services URL's path read: `/database/1/{container}/{environment}/
/// {database}/{operation…}`; `tokens/…` and `subscriptions/lookup` come
/// without a database, as the reference prints them.
public struct WebServicesPath: Equatable, Sendable {
    public var container: String
    public var environment: String
    /// `public`, `private` or `shared`; nil for the operations without one.
    public var database: String?
    /// The operation's subpath, `records/query`.
    public var operation: String

    public static let databases: Set<String> = ["public", "private", "shared"]

    /// Nil when the path is not one: the controller answers NOT_FOUND.
    public init?(container: String, environment: String, rest: [Substring]) {
        guard let first = rest.first else { return nil }
        self.container = container
        self.environment = environment
        if Self.databases.contains(String(first)) {
            guard rest.count >= 2 else { return nil }
            database = String(first)
            operation = rest.dropFirst().joined(separator: "/")
        } else {
            database = nil
            operation = rest.joined(separator: "/")
        }
    }
}
