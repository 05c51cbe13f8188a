import CanopyIdentity
import CanopyRequestStore
import Foundation
import Logging
import Metrics

/// Who is asking, from the token a request presents: a Canopy token
/// (`cnp_…` or a web auth token, looked up in the database) or an identity provider's JWT
/// (verified by ``TokenVerifier``, then signed in: the first sign-in
/// creates the user). One place for HTTP and WebSocket alike, and so the
/// place that holds the per-user limits (``UserLimits``) checked once the
/// caller is known.
struct Authenticator: Sendable {
    /// An authenticated caller, and until when the credential holds (a
    /// JWT's `exp`; nil for a Canopy token, which holds until revoked).
    struct Caller: Sendable {
        var userID: Int64
        var expires: Date?
    }

    let database: RequestDatabase
    let verifier: TokenVerifier?
    let limits: UserLimits
    /// What a request without a token may do, and its rate by address.
    let anonymous: AnonymousAccess

    /// Refused credentials by kind (`canopy`, `jwt`, `other`), for /metrics:
    /// a rise in `jwt` is often a provider's key rotation or a wrong audience.
    static let refusedCanopyTokens = Counter(label: "canopy_auth_refusals_total", dimensions: [("credential", "canopy")])
    static let refusedJWTs = Counter(label: "canopy_auth_refusals_total", dimensions: [("credential", "jwt")])
    static let refusedOthers = Counter(label: "canopy_auth_refusals_total", dimensions: [("credential", "other")])

    /// The caller, or an ``APIError`` `NOT_AUTHENTICATED` whose message says
    /// which check failed (never the token itself).
    func caller(token: String, nonce: String?, logger: Logger) async throws -> Caller {
        if token.hasPrefix(BearerToken.prefix) || BearerToken(parsing: token, as: .webAuth) != nil {
            guard let userID = try await database.authenticate(token: token, logger: logger) else {
                Self.refusedCanopyTokens.increment()
                throw APIError(.notAuthenticated, "the bearer token is not valid: unknown or revoked")
            }
            return Caller(userID: userID, expires: nil)
        }
        guard TokenVerifier.looksLikeJWT(token) else {
            Self.refusedOthers.increment()
            throw APIError(.notAuthenticated, "the bearer token is neither a Canopy token (cnp_… or a web auth token) nor a JWT")
        }
        guard let verifier else {
            throw APIError(.notAuthenticated, "this server accepts no identity-provider tokens (it was started without --auth-config)")
        }
        let identity: VerifiedIdentity
        do {
            identity = try await verifier.verify(token, nonce: nonce)
        } catch {
            Self.refusedJWTs.increment()
            logger.debug("refused a JWT", metadata: ["canopy.reason": "\(error.message)"])
            throw error
        }
        let signIn = SignIn(
            issuer: identity.issuer, subject: identity.subject, provider: identity.provider,
            displayName: identity.name,
            // An address that cannot be stored is as good as none.
            email: identity.email.flatMap(ContactForm.email), phone: identity.phone.flatMap(ContactForm.phone)
        )
        let userID = try await database.userID(signingIn: signIn, logger: logger)
        return Caller(userID: userID, expires: identity.expires)
    }
}
