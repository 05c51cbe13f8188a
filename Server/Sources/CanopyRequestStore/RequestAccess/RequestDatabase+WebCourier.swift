import Foundation
import Logging
import PostgresNIO

/// One turn of a web courier's long poll (`canopy.courier_take`).
public enum CourierTurn: Sendable, Equatable {
    /// No courier has the token.
    case unknown
    /// Nothing waits for the courier now.
    case nothing
    /// A subscription of the courier's user fired: its ID, kind (DATABASE,
    /// ZONE, QUERY) and scope (PRIVATE, SHARED, PUBLIC), nil when it was
    /// deleted since; `device` and `version` name the notification.
    case fired(device: UUID, version: Int64, subscriptionID: String, kind: String?, scope: String?)
}

extension RequestDatabase {
    /// A long poll begins: whether a web courier has the token whose
    /// SHA-256 is `tokenHash`, noted as polled (once a poll).
    public func courierPolled(tokenHash: Data, logger: Logger) async throws -> Bool {
        let rows = try await primary.withConnection { connection in
            try await connection.query("SELECT canopy.courier_poll(\(tokenHash))::text", logger: logger).collect()
        }
        return try rows.first?.decode(String?.self) != nil
    }

    /// Takes what waits for the web courier whose token's SHA-256 is
    /// `tokenHash`, on the primary, as nobody: the token is the page's
    /// only credential, and the function reads just that courier's queue.
    public func courierTake(tokenHash: Data, logger: Logger) async throws -> CourierTurn {
        let rows = try await primary.withConnection { connection in
            try await connection.query(
                "SELECT device_id, version, subscription_id, kind, scope FROM canopy.courier_take(\(tokenHash))", logger: logger
            ).collect()
        }
        guard let row = rows.first else { return .unknown }
        let (device, version, subscription, kind, scope) = try row.decode((UUID, Int64?, String?, String?, String?).self)
        guard let version, let subscription else { return .nothing }
        return .fired(device: device, version: version, subscriptionID: subscription, kind: kind, scope: scope)
    }
}
