/// `PRIVATE` (the caller's own zones) or `SHARED` (zones others shared with
/// the caller, who accepted).
public enum DatabaseScope: String, Sendable {
    case `private` = "PRIVATE"
    case shared = "SHARED"

    static func read(_ arguments: Arguments) throws -> DatabaseScope {
        let text = try arguments.requiredString("scope")
        guard let scope = DatabaseScope(rawValue: text) else {
            throw arguments.invalid("scope", "scope must be PRIVATE or SHARED, not \(text)")
        }
        return scope
    }
}
