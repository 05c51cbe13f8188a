import CanopyIdentity
import CanopyPlanner
import Foundation
import Logging

/// A socket's credential: read from the upgrade's headers or from
/// `connection_init`'s payload (browsers cannot set headers on a WebSocket),
/// and checked again every second while the socket is open.
struct WebSocketCredential: Sendable {
    /// How often the socket's credential is checked again.
    static let checkInterval: Duration = .seconds(1)

    var token: String?
    var nonce: String?

    /// The upgrade's values, overridden by the payload's
    /// (`Authorization`, `authToken` or `token`, and `nonce`).
    init(headerToken: String?, headerNonce: String?, payload: JSONValue?) {
        var header = headerToken
        var nonce = headerNonce
        if case .object(let fields)? = payload {
            for key in ["Authorization", "authorization", "authToken", "token"] {
                if case .string(let value)? = fields[key] { header = value }
            }
            if case .string(let value)? = fields["nonce"] { nonce = value }
        }
        self.token = header.flatMap { BearerTokenReader.token(in: $0, schemeOptional: true) }
        self.nonce = nonce
    }

    /// Every second: a JWT past its `exp` (with the verifier's leeway), or a
    /// Canopy token that no longer authenticates as the same user, ends the
    /// watch with the reason to close the socket (4403). A database that
    /// does not answer is not a refusal. Returns when cancelled, too.
    static func watch(
        token: String, nonce: String?, caller: Authenticator.Caller, authenticator: Authenticator,
        requestID: String, logger: Logger
    ) async -> String? {
        while !Task.isCancelled {
            try? await Task.sleep(for: checkInterval)
            if Task.isCancelled { return nil }
            if let expires = caller.expires {
                if Date().timeIntervalSince(expires) > TokenVerifier.leeway {
                    return "Forbidden: the token expired; connect again with a fresh one"
                }
                continue
            }
            do {
                let now = try await authenticator.caller(token: token, nonce: nonce, logger: logger)
                if now.userID != caller.userID { throw APIError(.notAuthenticated, "the token now belongs to another user") }
            } catch {
                let apiError = APIError(error, requestID: requestID, logger: logger)
                guard apiError.code == .notAuthenticated else { continue }
                logger.info("closing a websocket whose token no longer authenticates", metadata: ["canopy.reason": "\(apiError.message)"])
                return "Forbidden: \(apiError.message)"
            }
        }
        return nil
    }
}
