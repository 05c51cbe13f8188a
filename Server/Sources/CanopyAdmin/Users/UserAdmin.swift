import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// A user as the CLI and `me` show it.
public struct UserSummary: Sendable, Codable, Equatable {
    public var id: Int64
    public var userRecordName: String
    public var name: String
    public var email: String?
    public var phone: String?
}

/// Account administration for `canopy users`: creating users and issuing
/// tokens. Runs on an administrator's connection, outside the gateway.
public struct UserAdmin: Sendable {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// Creates a user (with its _defaultZone) and a first token.
    public func add(name: String, email: String?, phone: String?, connection: PostgresConnection) async throws -> (UserSummary, BearerToken) {
        let email = email.map(ContactForm.normalizedEmail)
        let phone = phone.map(ContactForm.normalizedPhone)
        try Self.validate(name: name, email: email, phone: phone)
        do {
            return try await connection.inTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    SELECT id, record_name FROM canopy.create_user(\(name), \(email), \(phone), NULL)
                    """,
                    logger: logger
                )
                var created: UserSummary?
                for try await (id, recordName) in rows.decode((Int64, String).self) {
                    created = UserSummary(id: id, userRecordName: recordName, name: name, email: email, phone: phone)
                }
                guard let user = created else { throw StoreError(.query, "the new user was not returned") }
                let token = try await issue(userID: user.id, connection: connection)
                return (user, token)
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            let constraint = error.serverInfo?[.constraintName] ?? ""
            let what = constraint.contains("email") ? "email \(email ?? "")" : constraint.contains("phone") ? "phone \(phone ?? "")" : "name \(name)"
            throw StoreError(.alreadyExists, "a user with \(what) already exists", sqlState: "23505", underlying: error)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23514" {
            throw StoreError(.invalidInput, "invalid user: \(PostgresErrors.message(of: error))", sqlState: "23514", underlying: error)
        }
    }

    /// Issues another token for an existing user, found by name or
    /// userRecordName: a Canopy token (`cnp_…`), or with `form: .webAuth`
    /// one in the shape of a CloudKit web auth token, for server jobs and
    /// tests that act as a person through Web Services (`ckWebAuthToken`).
    public func token(
        for nameOrRecordName: String, form: BearerToken.Form = .canopy, connection: PostgresConnection
    ) async throws -> (UserSummary, BearerToken) {
        try await connection.inTransaction(logger: logger) { connection in
            let user = try await find(nameOrRecordName, connection: connection)
            return (user, try await issue(userID: user.id, form: form, connection: connection))
        }
    }

    /// Finds a user by name or userRecordName; never user 0, the public
    /// zone's reserved owner (migrations/0038), which is nobody's account.
    public func find(_ nameOrRecordName: String, connection: PostgresConnection) async throws -> UserSummary {
        let rows = try await connection.query(
            """
            SELECT id, record_name, name, email, phone FROM canopy.users
             WHERE (name = \(nameOrRecordName) OR record_name = \(nameOrRecordName)) AND id <> 0
            """,
            logger: logger
        )
        for try await (id, recordName, name, email, phone) in rows.decode((Int64, String, String, String?, String?).self) {
            return UserSummary(id: id, userRecordName: recordName, name: name, email: email, phone: phone)
        }
        throw StoreError(.notFound, "no user named '\(nameOrRecordName)' (create one with: canopy users add \(nameOrRecordName))")
    }

    private func issue(userID: Int64, form: BearerToken.Form = .canopy, connection: PostgresConnection) async throws -> BearerToken {
        let token = BearerToken.generate(form)
        try await connection.query(
            "INSERT INTO canopy.api_tokens (user_id, selector, secret_hash) VALUES (\(userID), \(token.selector), \(Data(token.secretHash)))",
            logger: logger
        )
        return token
    }

    static func validate(name: String, email: String?, phone: String?) throws {
        if name.range(of: "^[A-Za-z0-9][A-Za-z0-9_.@-]{0,62}$", options: .regularExpression) == nil {
            throw StoreError(.invalidInput, "user name '\(name)' must be 1-63 of letters, digits and _.@-, starting with a letter or digit")
        }
        if let email, !ContactForm.isEmail(email) {
            throw StoreError(.invalidInput, "email '\(email)' is not an email address")
        }
        if let phone, !ContactForm.isPhone(phone) {
            throw StoreError(.invalidInput, "phone '\(phone)' must be 3-20 digits with an optional leading +")
        }
    }
}
