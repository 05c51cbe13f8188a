import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// A bearer token as `canopy users tokens` lists it: never the secret,
/// only the public prefix (`cnp_<selector>`) that names it.
public struct TokenSummary: Sendable, Codable, Equatable {
    /// `cnp_<selector>`: what `canopy users revoke` takes.
    public var prefix: String
    public var created: Date
    public var lastUsed: Date?
    public var revoked: Date?
}

extension UserAdmin {
    /// The tokens of a user (found by name or userRecordName), oldest first,
    /// revoked ones included.
    public func tokens(of nameOrRecordName: String, connection: PostgresConnection) async throws -> (UserSummary, [TokenSummary]) {
        let user = try await find(nameOrRecordName, connection: connection)
        let rows = try await connection.query(
            """
            SELECT selector, created_at, last_used_at, revoked_at FROM canopy.api_tokens
             WHERE user_id = \(user.id) ORDER BY created_at, id
            """,
            logger: logger
        )
        var tokens: [TokenSummary] = []
        for try await (selector, created, lastUsed, revoked) in rows.decode((String, Date, Date?, Date?).self) {
            tokens.append(TokenSummary(prefix: BearerToken.prefix + selector, created: created, lastUsed: lastUsed, revoked: revoked))
        }
        return (user, tokens)
    }

    /// Revokes the one live token whose `cnp_<selector>` starts with
    /// `prefix` (the `cnp_` may be left out; a whole token works too). At
    /// least 6 characters of the selector, so a typo cannot revoke a
    /// stranger's token by accident. Returns the token and its user.
    public func revoke(prefix given: String, connection: PostgresConnection) async throws -> (UserSummary, TokenSummary) {
        var selector = given.hasPrefix(BearerToken.prefix) ? String(given.dropFirst(BearerToken.prefix.count)) : given
        if let underscore = selector.firstIndex(of: "_") { selector = String(selector[..<underscore]) }
        guard selector.count >= 6, selector.count <= 16, selector.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw StoreError(.invalidInput, "'\(given.prefix(24))' is not a token prefix: give cnp_ and at least 6 of the 16 hex digits that follow it (canopy users tokens NAME lists them)")
        }
        return try await connection.inTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                SELECT t.id, t.selector, t.created_at, t.last_used_at, u.id, u.record_name, u.name, u.email, u.phone
                  FROM canopy.api_tokens t JOIN canopy.users u ON u.id = t.user_id
                 WHERE t.revoked_at IS NULL AND starts_with(t.selector, \(selector))
                 FOR UPDATE OF t
                """,
                logger: logger
            )
            var matches: [(Int64, TokenSummary, UserSummary)] = []
            for try await (id, selector, created, lastUsed, userID, recordName, name, email, phone)
                in rows.decode((Int64, String, Date, Date?, Int64, String, String, String?, String?).self) {
                matches.append((
                    id, TokenSummary(prefix: BearerToken.prefix + selector, created: created, lastUsed: lastUsed, revoked: nil),
                    UserSummary(id: userID, userRecordName: recordName, name: name, email: email, phone: phone)
                ))
            }
            guard matches.count == 1 else {
                throw matches.isEmpty
                    ? StoreError(.notFound, "no live token starts with cnp_\(selector) (canopy users tokens NAME lists a user's tokens)")
                    : StoreError(.invalidInput, "\(matches.count) live tokens start with cnp_\(selector); give more of the prefix")
            }
            let (id, found, user) = matches[0]
            var token = found
            let revoked = try await connection.query(
                "UPDATE canopy.api_tokens SET revoked_at = now() WHERE id = \(id) RETURNING revoked_at", logger: logger
            )
            for try await (at) in revoked.decode(Date.self) { token.revoked = at }
            return (user, token)
        }
    }
}
