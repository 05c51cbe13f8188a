import Foundation
import Logging
import PostgresNIO

/// A person's token as the database last said (cached by selector): whose
/// it is, its current secret's hash, the hash its last rotation replaced
/// while that still holds, and since when the current secret is the token's.
struct StoredToken: Sendable {
    var userID: Int64
    var hash: [UInt8]
    var previousHash: [UInt8]?
    var secretSince: Date

    /// The presented secret's standing, compared in constant time; nil when it is neither secret.
    func match(_ presentedHash: [UInt8]) -> PresentedToken? {
        if BearerToken.constantTimeEqual(hash, presentedHash) {
            return PresentedToken(userID: userID, isCurrentSecret: true, secretSince: secretSince)
        }
        if let previousHash, BearerToken.constantTimeEqual(previousHash, presentedHash) {
            return PresentedToken(userID: userID, isCurrentSecret: false, secretSince: secretSince)
        }
        return nil
    }
}

/// A person's token that authenticated: whose it is, and whether the
/// secret presented is the token's current one or the one its last
/// rotation replaced (docs/WEB_SERVICES.md, "The web token rotates").
public struct PresentedToken: Sendable, Equatable {
    public var userID: Int64
    public var isCurrentSecret: Bool
    /// Since when the current secret is the token's (its issue, or its last
    /// rotation), on this gateway's clock.
    public var secretSince: Date
}

/// What asking a web auth token to rotate came to.
public enum WebTokenRotation: Sendable {
    /// The token's secret is now `next`'s; the presented one holds for the overlap.
    case rotated(next: BearerToken)
    /// The presented secret is current and younger than the age asked: send it again.
    case current
    /// Another request replaced the presented secret first (its answer
    /// carries the new one), or the token is gone.
    case replaced
}

extension RequestDatabase {
    /// Rotates the web auth token `presented` (already authenticated): when
    /// its secret is still the current one and at least `age` old, a fresh
    /// secret under the same selector (so its prefix, what lists and
    /// revocations name, stays) becomes current and the presented one
    /// holds `overlap` more (`canopy.rotate_web_token`, which decides on
    /// the database's clock, so of racing requests one rotates).
    public func rotateWebToken(_ presented: BearerToken, age: Duration, overlap: Duration, logger: Logger) async throws -> WebTokenRotation {
        let next = BearerToken(form: .webAuth, selector: presented.selector, secret: BearerToken.generate(.webAuth).secret)
        let presentedHash = Data(presented.secretHash), nextHash = Data(next.secretHash)
        let ageSeconds = age.secondsValue, overlapSeconds = overlap.secondsValue
        let rows = try await primary.withConnection { connection in
            try await connection.query(
                """
                SELECT canopy.rotate_web_token(\(presented.selector), \(presentedHash), \(nextHash),
                                               \(ageSeconds) * interval '1 second', \(overlapSeconds) * interval '1 second')
                """,
                logger: logger
            ).collect()
        }
        let outcome = try rows.first?.decode(String.self)
        if outcome == "ROTATED" {
            // This gateway knows the new state: no lookup for the next request.
            if var stored = tokens.value(for: presented.selector) {
                stored.previousHash = presented.secretHash
                stored.hash = next.secretHash
                stored.secretSince = Date()
                tokens.store(stored, for: presented.selector)
            }
            return .rotated(next: next)
        }
        return outcome == "CURRENT" ? .current : .replaced
    }
}

extension Duration {
    /// The duration in seconds, fractions kept.
    package var secondsValue: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
