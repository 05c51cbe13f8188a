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
    /// More servers from a multi-host URL (`host=a,b` or `a:5432,b:5432`),
    /// tried with `transport` for whichever is the primary, as libpq's
    /// `target_session_attrs=read-write` does (docs/DEPLOYMENT.md).
    public var otherHosts: [Transport] = []
    public var username: String
    public var password: String?
    public var database: String
    /// `sslmode` from a URL, as libpq reads it (TCP only; a Unix socket is
    /// never encrypted): `disable` (default); `prefer` (TLS if the server
    /// offers it) and `require` (TLS or nothing), neither checking the
    /// server's certificate unless `sslrootcert` is given (then as
    /// `verify-ca`, as libpq does); `verify-ca` (the certificate must chain
    /// to `sslrootcert`, or to the system's roots without it); `verify-full`
    /// (also for the host name the URL names).
    public var sslMode: String
    /// `sslrootcert` from a URL: a PEM file of the certificates that sign
    /// the server's (a managed database's CA bundle).
    public var sslRootCertificate: String?

    static let sslModes = ["disable", "prefer", "require", "verify-ca", "verify-full"]

    public init(transport: Transport, username: String, password: String?, database: String, sslMode: String = "disable", sslRootCertificate: String? = nil) {
        self.transport = transport
        self.username = username
        self.password = password
        self.database = database
        self.sslMode = sslMode
        self.sslRootCertificate = sslRootCertificate
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=...`
    /// (also `postgresql://`, and `?host=/socket/dir` for Unix sockets).
    /// Several servers, as libpq writes them, make a multi-host URL:
    /// `postgres://u@a:5432,b:5433/db?target_session_attrs=read-write`, or
    /// `?host=a,b&port=5432,5433`; the primary among them is used.
    public init(url string: String) throws {
        let (single, extraAuthorityHosts) = Self.splittingHosts(string)
        guard let components = URLComponents(string: single),
              let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw StoreError(.invalidConfiguration, "database URL must look like postgres://USER:PASSWORD@HOST:PORT/DATABASE, got '\(Self.redacted(string))'")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let queryHosts = (query["host"] ?? "").split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let queryPorts = (query["port"] ?? "").split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        func port(_ index: Int) throws -> Int {
            let text = queryPorts.count == 1 ? queryPorts[0] : (index < queryPorts.count ? queryPorts[index] : "")
            if text.isEmpty { return 5432 }
            guard let port = Int(text), (1...65535).contains(port) else {
                throw StoreError(.invalidConfiguration, "database URL '\(Self.redacted(string))' has a bad port '\(text)'")
            }
            return port
        }
        var transports: [Transport] = []
        if !queryHosts.isEmpty, queryHosts != [""] {
            // `?host=` (sockets or names) and `?port=`, one port or one per host.
            guard queryPorts.count <= 1 || queryPorts.count == queryHosts.count else {
                throw StoreError(.invalidConfiguration, "database URL '\(Self.redacted(string))' names \(queryHosts.count) hosts but \(queryPorts.count) ports")
            }
            for (index, host) in queryHosts.enumerated() {
                guard !host.isEmpty else { throw StoreError(.invalidConfiguration, "database URL '\(Self.redacted(string))' has an empty host") }
                let number = try components.port.flatMap { queryPorts.isEmpty ? $0 : nil } ?? port(index)
                transports.append(host.hasPrefix("/") ? .unixSocket(directory: host, port: number) : .tcp(host: host, port: number))
            }
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw StoreError(.invalidConfiguration, "database URL '\(Self.redacted(string))' names no host")
            }
            transports.append(.tcp(host: host, port: try components.port ?? port(0)))
            for extra in extraAuthorityHosts {
                guard let parsed = URLComponents(string: "postgres://\(extra)"), let host = parsed.host, !host.isEmpty else {
                    throw StoreError(.invalidConfiguration, "database URL '\(Self.redacted(string))' has a bad host '\(extra)'")
                }
                transports.append(.tcp(host: host, port: parsed.port ?? 5432))
            }
        }
        self.transport = transports[0]
        self.otherHosts = Array(transports.dropFirst())
        let attributes = query["target_session_attrs"] ?? "read-write"
        guard ["read-write", "primary", "any"].contains(attributes), transports.count == 1 || attributes != "any" else {
            throw StoreError(.invalidConfiguration, "target_session_attrs must be read-write or primary (Canopy writes, so it needs the primary), got '\(attributes)'")
        }
        guard let user = components.user, !user.isEmpty else {
            throw StoreError(.invalidConfiguration, "database URL '\(Self.redacted(string))' names no user")
        }
        self.username = user.removingPercentEncoding ?? user
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.isEmpty ? self.username : path
        self.sslMode = query["sslmode"] ?? "disable"
        guard Self.sslModes.contains(sslMode) else {
            throw StoreError(.invalidConfiguration, "sslmode must be one of \(Self.sslModes.joined(separator: ", ")), got '\(sslMode)'")
        }
        self.sslRootCertificate = query["sslrootcert"].flatMap { $0.isEmpty ? nil : $0 }
        if let root = sslRootCertificate, !FileManager.default.isReadableFile(atPath: root) {
            throw StoreError(.invalidConfiguration, "sslrootcert '\(root)' is not a readable file (a PEM file of the certificates that sign the server's)")
        }
    }

    /// Every server of the URL, in its order.
    public var hosts: [Transport] { [transport] + otherHosts }

    /// The same, reaching only the `index`th server.
    public func host(_ index: Int) -> DatabaseEndpoint {
        var copy = self
        copy.transport = hosts[index]
        copy.otherHosts = []
        return copy
    }

    /// `postgres://u@a:1,b:2/d` as `postgres://u@a:1/d` and `["b:2"]`:
    /// URLComponents reads one host only.
    static func splittingHosts(_ url: String) -> (String, [String]) {
        guard let schemeEnd = url.range(of: "://") else { return (url, []) }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let userEnd = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
        let hostList = authority[userEnd...]
        guard hostList.contains(",") else { return (url, []) }
        let hosts = hostList.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let single = String(url[..<hostList.startIndex]) + hosts[0] + String(rest[authorityEnd...])
        return (single, Array(hosts.dropFirst()))
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
        if !otherHosts.isEmpty {
            let places = hosts.map(\.place)
            return "postgres://\(username)@/\(database)?host=\(places.map(\.host).joined(separator: ","))&port=\(places.map { String($0.port) }.joined(separator: ","))&target_session_attrs=read-write"
                + tlsParameters.map { "&\($0)" }.joined()
        }
        switch transport {
        case .tcp(let host, let port):
            return "postgres://\(username)@\(host):\(port)/\(database)" + (tlsParameters.isEmpty ? "" : "?" + tlsParameters.joined(separator: "&"))
        case .unixSocket(let directory, let port):
            return "postgres://\(username)@/\(database)?host=\(directory)&port=\(port)"
        }
    }

    /// `sslmode=…` and `sslrootcert=…` for a URL, when not the default.
    private var tlsParameters: [String] {
        guard sslMode != "disable" else { return [] }
        return ["sslmode=\(sslMode)"] + (sslRootCertificate.map { ["sslrootcert=\($0)"] } ?? [])
    }

    /// Environment variables that make libpq tools (psql) connect here.
    public var libpqEnvironment: [String: String] {
        var env: [String: String] = ["PGUSER": username, "PGDATABASE": database]
        let places = hosts.map(\.place)
        env["PGHOST"] = places.map(\.host).joined(separator: ",")
        env["PGPORT"] = places.map { String($0.port) }.joined(separator: ",")
        if !otherHosts.isEmpty { env["PGTARGETSESSIONATTRS"] = "read-write" }
        if let password { env["PGPASSWORD"] = password }
        env["PGSSLMODE"] = sslMode
        if let sslRootCertificate { env["PGSSLROOTCERT"] = sslRootCertificate }
        return env
    }

    var unixSocketPath: String? {
        if case .unixSocket(let directory, let port) = transport {
            return "\(directory)/.s.PGSQL.\(port)"
        }
        return nil
    }

    /// TLS as `sslmode` and `sslrootcert` say (see `sslMode`).
    var tlsConfiguration: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        let verifies = sslMode.hasPrefix("verify-") || sslRootCertificate != nil
        switch sslMode {
        case "verify-full": configuration.certificateVerification = .fullVerification
        case _ where verifies: configuration.certificateVerification = .noHostnameVerification
        default: configuration.certificateVerification = .none
        }
        if verifies, let sslRootCertificate {
            configuration.trustRoots = .file(sslRootCertificate)
        }
        return configuration
    }

    private func tls() throws -> PostgresConnection.Configuration.TLS {
        switch sslMode {
        case "disable": return .disable
        case "prefer": return .prefer(try NIOSSLContext(configuration: tlsConfiguration))
        default: return .require(try NIOSSLContext(configuration: tlsConfiguration))
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
            case "disable": tls = .disable
            case "prefer": tls = .prefer(tlsConfiguration)
            default: tls = .require(tlsConfiguration)
            }
            return .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        case .unixSocket:
            return .init(unixSocketPath: unixSocketPath!, username: username, password: password, database: database)
        }
    }

    static func redacted(_ url: String) -> String {
        // user:password@ in the authority, whatever follows (one host or several).
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@"),
              let colon = rest[..<at].firstIndex(of: ":") else { return url }
        return String(url[..<rest.index(after: colon)]) + "***" + String(rest[at...])
    }
}

extension DatabaseEndpoint.Transport {
    /// Host (or socket directory) and port, as libpq's PGHOST and PGPORT say them.
    var place: (host: String, port: Int) {
        switch self {
        case .tcp(let host, let port): return (host, port)
        case .unixSocket(let directory, let port): return (directory, port)
        }
    }
}
