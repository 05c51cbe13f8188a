import Foundation
import PostgresNIO

/// `issueToken`: stores a token the gateway generated for the caller (the
/// selector and the secret's SHA-256; `canopy.issue_token` keeps only those)
/// and answers it, once. Canopy's addition: an app trades a provider's
/// short-lived JWT for a token it keeps (docs/IDENTITY.md).
public struct IssueTokenPlan: Sendable {
    public let statement: SQLStatement
    let fields: [SelectedField]
    let token: String

    /// - Parameters:
    ///   - token: the whole new token (`cnp_<selector>_<secret>` or a web
    ///     auth token), answered once
    ///   - selector: its public part
    ///   - secretHash: SHA-256 of its secret
    public init(_ field: SelectedField, token: String, selector: String, secretHash: [UInt8]) throws {
        fields = field.children
        self.token = token
        for child in fields where !["token", "prefix", "__typename"].contains(child.name) {
            throw QueryError.noField(child, of: "IssuedToken")
        }
        var builder = SQLBuilder()
        let selector = builder.bind(selector), hash = builder.bind(ByteBuffer(bytes: secretHash))
        builder.append("SELECT canopy.issue_token(\(selector), \(hash))")
        statement = builder.query
    }
}

extension IssueTokenPlan: FieldPlan {
    public static var writes: Bool { true }

    /// The stored token's prefix (nil: nobody is signed in).
    public static func decode(_ row: PostgresRow) throws -> String? {
        try row.decode(String?.self)
    }

    public func answer(_ row: String??) throws -> String? {
        guard let prefix = row ?? nil else { throw QueryError(.notAuthenticated, "the token's user no longer exists") }
        let members = fields.map { field -> String in
            let value = switch field.name {
            case "token": token
            case "prefix": prefix
            default: "IssuedToken"
            }
            return JSONValue.string(field.responseKey).jsonText + ":" + JSONValue.string(value).jsonText
        }
        return "{" + members.joined(separator: ",") + "}"
    }
}

/// `revokeToken(prefix:)`: revokes one of the caller's own live tokens
/// (sign out). Another user's token is never touched: the function matches
/// the caller's rows only, so a stranger's prefix answers false.
public struct RevokeTokenPlan: Sendable {
    public let statement: SQLStatement
    /// The token's `cnp_<selector>`, as given.
    public let prefix: String

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let prefix = try arguments.requiredString("prefix")
        guard prefix.range(of: "^cnp_[0-9a-f]{16}$", options: .regularExpression) != nil else {
            throw arguments.invalid("prefix", "prefix must be cnp_ and 16 hex digits, as issueToken answered it")
        }
        self.prefix = prefix
        var builder = SQLBuilder()
        builder.append("SELECT canopy.revoke_own_token(\(builder.bind(prefix)))")
        statement = builder.query
    }
}

extension RevokeTokenPlan: FieldPlan {
    public static var writes: Bool { true }

    public static func decode(_ row: PostgresRow) throws -> Int {
        try row.decode(Int.self)
    }

    public func answer(_ row: Int?) throws -> String? {
        (row ?? 0) > 0 ? "true" : "false"
    }
}
