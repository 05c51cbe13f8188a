import CanopyOutbound
import NIOCore

/// Whether the console may be served to a client: the page takes a
/// person's sign-in and holds their token, so over plain HTTP it goes only
/// to this machine (a browser on the host, or a proxy beside it). An https
/// `--public-url` says a proxy terminates TLS in front; `--console-over-http`
/// says the operator accepts plain HTTP anyway (DECISIONS 76).
public struct ConsoleTransport: Sendable {
    /// The public URL is https: TLS ends at a proxy in front.
    let behindTLS: Bool
    /// `--console-over-http`.
    let plainHTTPAllowed: Bool

    public init(publicURL: String, plainHTTPAllowed: Bool) {
        behindTLS = publicURL.lowercased().hasPrefix("https://")
        self.plainHTTPAllowed = plainHTTPAllowed
    }

    /// - Parameter client: the connection's remote address; nil when the
    ///   request came through no socket (the gateway run in-process by tests).
    public func allows(client: SocketAddress?) -> Bool {
        if behindTLS || plainHTTPAllowed { return true }
        guard let client else { return true }
        return Self.isLoopback(client)
    }

    /// 127.0.0.0/8, ::1, and 127.x carried in IPv6, as the outbound check
    /// classifies them; a Unix domain socket is not loopback.
    public static func isLoopback(_ address: SocketAddress) -> Bool {
        IPAddress(address).map { AddressScope.of($0) == .loopback } ?? false
    }
}
