import Foundation
import PostgresNIO

/// Where a PostgreSQL server is and who to be there: the one description
/// that the CLI, the gateway and `canopy psql` all connect from.
public struct DatabaseEndpoint: Sendable, Equatable {
    /// How to reach the server.
    public enum Transport: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// A Unix socket directory and the server's port (part of the socket file name).
        case unixSocket(directory: String, port: Int)
    }

    public var transport: Transport
    public var username: String
    public var password: String?
    public var database: String
    /// `sslmode` from a URL: `disable` (default), `prefer` or `require`.
    public var sslMode: String

    public init(transport: Transport, username: String, password: String?, database: String, sslMode: String = "disable") {
        self.transport = transport
        self.username = username
        self.password = password
        self.database = database
        self.sslMode = sslMode
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=...`
    /// (also `postgresql://`, and `?host=/socket/dir` for Unix sockets).
    public init(url string: String) throws {
        guard let components = URLComponents(string: string),
              let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw StoreError(.invalidConfiguration, "database URL must look like postgres://USER:PASSWORD@HOST:PORT/DATABASE, got '\(Self.redacted(string))'")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let port = components.port ?? Int(query["port"] ?? "") ?? 5432
        if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
            self.transport = .unixSocket(directory: socketDirectory, port: port)
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw StoreError(.invalidConfiguration, "database URL '\(Self.redacted(string))' names no host")
            }
            self.transport = .tcp(host: host, port: port)
        }
        guard let user = components.user, !user.isEmpty else {
            throw StoreError(.invalidConfiguration, "database URL '\(Self.redacted(string))' names no user")
        }
        self.username = user.removingPercentEncoding ?? user
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.isEmpty ? self.username : path
        self.sslMode = query["sslmode"] ?? "disable"
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw StoreError(.invalidConfiguration, "sslmode must be disable, prefer or require, got '\(sslMode)'")
        }
    }

    /// The same server and database as another role.
    public func asUser(_ username: String, password: String?) -> DatabaseEndpoint {
        var copy = self
        copy.username = username
        copy.password = password
        return copy
    }

    /// The same server as another database.
    public func database(_ name: String) -> DatabaseEndpoint {
        var copy = self
        copy.database = name
        return copy
    }

    /// A URL for people, logs and `--database-url`, without the password.
    public var displayURL: String {
        switch transport {
        case .tcp(let host, let port):
            return "postgres://\(username)@\(host):\(port)/\(database)"
        case .unixSocket(let directory, let port):
            return "postgres://\(username)@/\(database)?host=\(directory)&port=\(port)"
        }
    }

    /// Environment variables that make libpq tools (psql) connect here.
    public var libpqEnvironment: [String: String] {
        var env: [String: String] = ["PGUSER": username, "PGDATABASE": database]
        switch transport {
        case .tcp(let host, let port):
            env["PGHOST"] = host
            env["PGPORT"] = String(port)
        case .unixSocket(let directory, let port):
            env["PGHOST"] = directory
            env["PGPORT"] = String(port)
        }
        if let password { env["PGPASSWORD"] = password }
        env["PGSSLMODE"] = sslMode
        return env
    }

    var unixSocketPath: String? {
        if case .unixSocket(let directory, let port) = transport {
            return "\(directory)/.s.PGSQL.\(port)"
        }
        return nil
    }

    private func tls() throws -> PostgresConnection.Configuration.TLS {
        switch sslMode {
        case "require": return .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case "prefer": return .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: return .disable
        }
    }

    /// Configuration for a single connection (CLI commands, migrations).
    public func connectionConfiguration() throws -> PostgresConnection.Configuration {
        switch transport {
        case .tcp(let host, let port):
            return .init(host: host, port: port, username: username, password: password, database: database, tls: try tls())
        case .unixSocket:
            return .init(unixSocketPath: unixSocketPath!, username: username, password: password, database: database)
        }
    }

    /// Configuration for a pool (the gateway).
    public func clientConfiguration() throws -> PostgresClient.Configuration {
        switch transport {
        case .tcp(let host, let port):
            let tls: PostgresClient.Configuration.TLS
            switch sslMode {
            case "require": tls = .require(.makeClientConfiguration())
            case "prefer": tls = .prefer(.makeClientConfiguration())
            default: tls = .disable
            }
            return .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        case .unixSocket:
            return .init(unixSocketPath: unixSocketPath!, username: username, password: password, database: database)
        }
    }

    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }
}
