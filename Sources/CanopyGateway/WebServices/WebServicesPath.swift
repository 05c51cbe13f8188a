/// A Web Services URL's path read: `/database/1/{container}/{environment}/
/// {database}/{operation…}`; `tokens/…` and `subscriptions/lookup` come
/// without a database, as the reference prints them.
struct WebServicesPath: Equatable {
    var container: String
    var environment: String
    /// `public`, `private` or `shared`; nil for the operations without one.
    var database: String?
    /// The operation's subpath, `records/query`.
    var operation: String

    static let databases: Set<String> = ["public", "private", "shared"]

    /// Nil when the path is not one: the controller answers NOT_FOUND.
    init?(container: String, environment: String, rest: [Substring]) {
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
