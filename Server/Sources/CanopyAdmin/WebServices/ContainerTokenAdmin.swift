import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// A container API token as `canopy tokens api list` shows it: never the
/// secret, only the public prefix that names it: the token's first 16 hex
/// digits (`cka_<selector>` for a token issued before issue 49).
public struct ContainerTokenSummary: Sendable, Codable, Equatable {
    /// What `canopy tokens api revoke` takes.
    public var prefix: String
    public var container: String
    public var name: String
    /// Where the sign-in page sends people back with `?ckWebAuthToken=…`.
    public var signInCallback: String?
    public var created: Date
    public var revoked: Date?
}

/// CloudKit Web Services' API tokens (`ckAPIToken`) for `canopy tokens
/// api`: made for a container, listed, revoked. Runs on an administrator's
/// connection, outside the gateway, which only looks tokens up.
public struct ContainerTokenAdmin: Sendable {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// A new token for `container`; the token's secret is in the returned
    /// ``BearerToken`` and nowhere else.
    public func add(
        container: String, name: String, signInCallback: String? = nil, connection: PostgresConnection
    ) async throws -> (ContainerTokenSummary, BearerToken) {
        if let signInCallback {
            guard let url = URL(string: signInCallback), url.scheme == "https" || url.scheme == "http", url.host != nil, url.fragment == nil else {
                throw StoreError(.invalidInput, "--sign-in-callback must be an http or https URL without a fragment, as https://app.example.com/signed-in")
            }
        }
        guard ContainerIdentifier.isValid(container) else {
            throw StoreError(.invalidInput, "'\(container.prefix(80))' is not a container identifier: letters, digits, '.', '-' and '_', starting with a letter or digit, as iCloud.com.example.app")
        }
        guard !name.isEmpty, name.utf8.count <= 255 else {
            throw StoreError(.invalidInput, "a token's name must be 1-255 bytes")
        }
        let token = BearerToken.generate(.api)
        let rows = try await connection.query(
            """
            INSERT INTO canopy.container_tokens (container, name, selector, secret_hash, sign_in_callback)
            VALUES (\(container), \(name), \(token.selector), \(Data(token.secretHash)), \(signInCallback))
            RETURNING created_at
            """,
            logger: logger
        )
        var created = Date()
        for try await at in rows.decode(Date.self) { created = at }
        return (ContainerTokenSummary(prefix: token.publicPrefix, container: container, name: name,
                                      signInCallback: signInCallback, created: created), token)
    }

    /// Every token, oldest first, revoked ones included.
    public func list(connection: PostgresConnection) async throws -> [ContainerTokenSummary] {
        let rows = try await connection.query(
            "SELECT selector, cka_form, container, name, sign_in_callback, created_at, revoked_at FROM canopy.container_tokens ORDER BY created_at, id",
            logger: logger
        )
        var tokens: [ContainerTokenSummary] = []
        for try await (selector, ckaForm, container, name, callback, created, revoked) in rows.decode((String, Bool, String, String, String?, Date, Date?).self) {
            tokens.append(ContainerTokenSummary(prefix: Self.prefix(selector, ckaForm: ckaForm), container: container, name: name,
                                                signInCallback: callback, created: created, revoked: revoked))
        }
        return tokens
    }

    /// How a token is named: its first 16 hex digits, or `cka_<selector>`
    /// for one issued in that form.
    static func prefix(_ selector: String, ckaForm: Bool) -> String {
        ckaForm ? BearerToken.containerPrefix + selector : selector
    }

    /// Revokes the one live token whose selector starts with `prefix` (at
    /// least 6 of its first 16 hex digits; a `cka_` before them may be
    /// given or left out; a whole token works too). A token revoked stops
    /// working within the gateway's token cache time (4 s).
    public func revoke(prefix given: String, connection: PostgresConnection) async throws -> ContainerTokenSummary {
        var selector = given.hasPrefix(BearerToken.containerPrefix) ? String(given.dropFirst(BearerToken.containerPrefix.count)) : given
        if let underscore = selector.firstIndex(of: "_") { selector = String(selector[..<underscore]) }
        if selector.utf8.count == BearerToken.apiTokenLength { selector = String(selector.prefix(16)) }
        guard selector.count >= 6, selector.count <= 16, selector.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw StoreError(.invalidInput, "'\(given.prefix(24))' is not a token prefix: give at least 6 of the token's first 16 hex digits (after cka_ for an older token; canopy tokens api list shows them)")
        }
        return try await connection.inTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE canopy.container_tokens SET revoked_at = now()
                 WHERE id = (SELECT id FROM canopy.container_tokens WHERE revoked_at IS NULL AND starts_with(selector, \(selector)))
                   AND (SELECT count(*) FROM canopy.container_tokens WHERE revoked_at IS NULL AND starts_with(selector, \(selector))) = 1
                RETURNING selector, cka_form, container, name, sign_in_callback, created_at, revoked_at
                """,
                logger: logger
            ).collect()
            if let row = rows.first {
                let (selector, ckaForm, container, name, callback, created, revoked) = try row.decode((String, Bool, String, String, String?, Date, Date?).self)
                return ContainerTokenSummary(prefix: Self.prefix(selector, ckaForm: ckaForm), container: container, name: name,
                                             signInCallback: callback, created: created, revoked: revoked)
            }
            let count = try await connection.query(
                "SELECT count(*)::int8 FROM canopy.container_tokens WHERE revoked_at IS NULL AND starts_with(selector, \(selector))",
                logger: logger
            ).collect().first?.decode(Int64.self) ?? 0
            throw count == 0
                ? StoreError(.notFound, "no live API token starts with \(selector) (canopy tokens api list shows them)")
                : StoreError(.invalidInput, "\(count) live API tokens start with \(selector); give more of the prefix")
        }
    }
}
