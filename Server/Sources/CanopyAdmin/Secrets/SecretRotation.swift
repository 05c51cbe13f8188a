import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// `canopy secrets rotate` and `canopy secrets list`: the server's signing
/// keys replaced with an overlap window, during which what the old key
/// signed is still accepted (docs/SECURITY.md, "Rotating the server's
/// secrets"). Gateways read the keys again within 30 s, so a window
/// shorter than a minute is refused.
public enum SecretRotation {
    /// What each rotatable key signs.
    public static let rotatable: [String: String] = [
        "cursor": "records page cursors",
        "change-token": "change tokens (zoneChanges, databaseChanges); past the window they are CHANGE_TOKEN_EXPIRED",
        "asset-url": "asset download URLs",
        "vapid": "Web Push requests; devices that subscribed with the old key are pushed with it until the window ends, then dropped (their pages must subscribe again)",
    ]

    /// The shortest window: twice the gateways' refresh interval.
    public static let minimumOverlap: Duration = .seconds(60)

    /// One key as `list` shows it: never its bytes.
    public struct Summary: Sendable {
        public var name: String
        public var createdAt: Date
        public var acceptedUntil: Date?
    }

    /// Rotates `name`; answers when the old key stops being accepted (nil
    /// when there was no key yet: one is made).
    public static func rotate(
        _ name: String, overlap: Duration, allowShortOverlap: Bool = false, connection: PostgresConnection, logger: Logger
    ) async throws -> Date? {
        guard rotatable[name] != nil else {
            throw StoreError(.invalidInput, "no rotatable secret named '\(name)': use one of \(rotatable.keys.sorted().joined(separator: ", "))")
        }
        guard allowShortOverlap || overlap >= minimumOverlap else {
            throw StoreError(.invalidInput, "the overlap must be at least 60 seconds: gateways read the keys again every 30 seconds")
        }
        var generator = SystemRandomNumberGenerator()
        let candidate = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let (seconds, attoseconds) = overlap.components
        let interval = "\(Double(seconds) + Double(attoseconds) / 1e18) seconds"
        let rows = try await connection.query(
            "SELECT canopy.rotate_server_secret(\(name), \(candidate), \(interval)::interval)", logger: logger
        ).collect()
        guard let row = rows.first else { throw StoreError(.query, "the rotation did not answer") }
        return try row.decode(Date?.self)
    }

    /// Every key's name and dates.
    public static func list(connection: PostgresConnection, logger: Logger) async throws -> [Summary] {
        let rows = try await connection.query("SELECT name, created_at, accepted_until FROM canopy.server_secret_summary()", logger: logger).collect()
        return try rows.map { row in
            let (name, created, until) = try row.decode((String, Date, Date?).self)
            return Summary(name: name, createdAt: created, acceptedUntil: until)
        }
    }
}
