/// `PRIVATE` (the caller's own zones), `SHARED` (zones others shared with
/// the caller, who accepted) or `PUBLIC` (the public database: one zone,
/// `_defaultZone`, whose record types' grants decide who reads and writes;
/// docs/API.md §15).
public enum DatabaseScope: String, Sendable {
    case `private` = "PRIVATE"
    case shared = "SHARED"
    case `public` = "PUBLIC"

    /// The `scope` argument. `publicRefusal`: what to answer (as
    /// `BAD_DATABASE`) when the operation does not exist in the public
    /// database; nil where it does.
    static func read(_ arguments: Arguments, publicRefusal: String?) throws -> DatabaseScope {
        let text = try arguments.requiredString("scope")
        guard let scope = DatabaseScope(rawValue: text) else {
            throw arguments.invalid("scope", "scope must be PRIVATE, SHARED or PUBLIC, not \(text)")
        }
        if scope == .public, let publicRefusal {
            throw QueryError(.badDatabase, publicRefusal, locations: arguments.location("scope"))
        }
        return scope
    }

    /// The sentence for an operation the public database does not have.
    static func notInPublic(_ what: String) -> String {
        "the public database (scope PUBLIC) has one zone, _defaultZone, and no custom zones or shares: \(what)"
    }

    /// The public zone's `ownerName`, as CloudKit names the owner of its
    /// public database's zone (`CKCurrentUserDefaultName`).
    public static let publicOwnerName = "__defaultOwner__"
}
