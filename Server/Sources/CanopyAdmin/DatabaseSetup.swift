import CanopyRequestStore
import Foundation
import Logging
import PostgresNIO

/// Which PostgreSQL a command talks to: the server named by a database URL,
/// or the embedded cluster under a data directory. Resolving it starts the
/// embedded cluster when needed.
public struct DatabaseSetup: Sendable {
    /// An administrator's URL (`--database-url`, `CANOPY_DATABASE_URL`); nil for the embedded cluster.
    public var databaseURL: String?
    /// The embedded cluster's directory (`--data-dir`, default `./.canopy`).
    public var dataDirectory: String
    /// How the gateway logs in when a URL is used: `CANOPY_GATEWAY_DATABASE_URL`,
    /// else the admin URL as `canopy_gateway` with `CANOPY_GATEWAY_PASSWORD`.
    public var gatewayURL: String?
    public var gatewayPassword: String?

    public static let gatewayRole = "canopy_gateway"

    public init(databaseURL: String?, dataDirectory: String, gatewayURL: String? = nil, gatewayPassword: String? = nil) {
        self.databaseURL = databaseURL
        self.dataDirectory = dataDirectory
        self.gatewayURL = gatewayURL
        self.gatewayPassword = gatewayPassword
    }

    /// Reads the options a command did not set from the environment.
    public static func fromEnvironment(databaseURL: String?, dataDirectory: String?) -> DatabaseSetup {
        let env = ProcessInfo.processInfo.environment
        return DatabaseSetup(
            databaseURL: databaseURL ?? env["CANOPY_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 },
            dataDirectory: dataDirectory ?? env["CANOPY_DATA_DIR"] ?? ".canopy",
            gatewayURL: env["CANOPY_GATEWAY_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 },
            gatewayPassword: env["CANOPY_GATEWAY_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        )
    }

    /// The resolved endpoints.
    public struct Resolved: Sendable {
        public let admin: DatabaseEndpoint
        public let gateway: DatabaseEndpoint
        /// The embedded cluster, if one is used, and whether this resolution started it.
        public let cluster: EmbeddedCluster?
        public let startedCluster: Bool
    }

    public func resolve(logger: Logger) async throws -> Resolved {
        if let databaseURL {
            let admin = try DatabaseEndpoint(url: databaseURL)
            let gateway = try gatewayURL.map(DatabaseEndpoint.init(url:))
                ?? admin.asUser(Self.gatewayRole, password: gatewayPassword)
            return Resolved(admin: admin, gateway: gateway, cluster: nil, startedCluster: false)
        }
        let cluster = EmbeddedCluster(dataDirectory: dataDirectory)
        let running = try await cluster.start(logger: logger)
        return Resolved(
            admin: running.adminEndpoint,
            gateway: running.adminEndpoint.asUser(Self.gatewayRole, password: nil),
            cluster: cluster,
            startedCluster: running.startedNow
        )
    }

    /// Opens one administrator connection, with a clear error if the server
    /// cannot be reached in time.
    public static func connect(_ endpoint: DatabaseEndpoint, logger: Logger) async throws -> PostgresConnection {
        if !endpoint.otherHosts.isEmpty {
            return try await connectToPrimary(endpoint, logger: logger)
        }
        let configuration = try endpoint.connectionConfiguration()
        do {
            return try await withTimeout(.seconds(15)) {
                try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(
                .databaseUnavailable,
                "cannot connect to \(endpoint.displayURL): \(PostgresErrors.message(of: error))",
                underlying: error
            )
        }
    }

    /// Of a multi-host URL's servers, a connection to the first that is a
    /// primary (not in recovery), as libpq's `target_session_attrs=read-write`;
    /// the error says what each server was.
    static func connectToPrimary(_ endpoint: DatabaseEndpoint, logger: Logger) async throws -> PostgresConnection {
        var findings: [String] = []
        for index in endpoint.hosts.indices {
            let server = endpoint.host(index)
            do {
                let connection = try await connect(server, logger: logger)
                let rows = try await connection.query("SELECT pg_is_in_recovery()", logger: logger)
                var standby = true
                for try await value in rows.decode(Bool.self) { standby = value }
                if !standby { return connection }
                try? await connection.close()
                findings.append("\(server.displayURL): a standby")
            } catch {
                findings.append("\(server.displayURL): \((error as? StoreError)?.message ?? PostgresErrors.message(of: error))")
            }
        }
        throw StoreError(.databaseUnavailable, "none of the servers is a primary (read-write): \(findings.joined(separator: "; "))")
    }

    /// Sets the gateway role's password (for URL deployments), without
    /// splicing it into SQL text on the client side.
    public static func setGatewayPassword(_ password: String, connection: PostgresConnection, logger: Logger) async throws {
        try await connection.inTransaction(logger: logger) { connection in
            try await connection.query("SELECT set_config('canopy.gateway_password', \(password), true)", logger: logger)
            try await connection.query(
                """
                DO $$ BEGIN
                    EXECUTE format('ALTER ROLE canopy_gateway PASSWORD %L', current_setting('canopy.gateway_password'));
                END $$
                """,
                logger: logger
            )
        }
    }
}
