import Foundation
import Logging
import PostgresNIO

extension RequestDatabase {
    /// The container a CloudKit Web Services API token (`ckAPIToken`:
    /// 64 hex digits, or `cka_…` from before issue 49) opens, or nil for an unknown, revoked or malformed one. The
    /// stored hash is compared here, in constant time; a looked-up token is
    /// remembered as long as a user's token is.
    public func container(ofAPIToken token: String, logger: Logger) async throws -> String? {
        guard let presented = BearerToken(parsingAPI: token) else { return nil }
        if let cached = containerTokens.value(for: presented.selector) {
            return BearerToken.constantTimeEqual(cached.hash, presented.secretHash) ? cached.container : nil
        }
        let rows = try await primary.withConnection { connection in
            try await connection.query(
                "SELECT container, secret_hash FROM canopy.container_token_for_selector(\(presented.selector)) WHERE container IS NOT NULL",
                logger: logger
            ).collect()
        }
        guard let (container, storedHash) = try rows.first?.decode((String, Data).self) else { return nil }
        containerTokens.store((container, Array(storedHash)), for: presented.selector)
        return BearerToken.constantTimeEqual(Array(storedHash), presented.secretHash) ? container : nil
    }

    /// The container and sign-in callback of the live API token whose
    /// selector is `selector` (an API token's first 16 hex digits, no secret: the sign-in page
    /// is opened with it); nil for none.
    public func signIn(forAPITokenSelector selector: String, logger: Logger) async throws -> (container: String, callback: String?)? {
        guard selector.utf8.count == 16, selector.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return nil }
        let rows = try await primary.withConnection { connection in
            try await connection.query(
                "SELECT container, sign_in_callback FROM canopy.container_sign_in_callback(\(selector)) WHERE container IS NOT NULL",
                logger: logger
            ).collect()
        }
        guard let (container, callback) = try rows.first?.decode((String, String?).self) else { return nil }
        return (container, callback)
    }
}
