/// A user-supplied URL that passed the outbound check, with the address
/// the request must go to: the connection is pinned there, so a name that
/// resolves elsewhere a moment later (DNS rebinding) changes nothing.
public struct OutboundDestination: Sendable, Equatable {
    public let url: String
    public let scheme: String
    /// As written in the URL, lower case (a name or an address).
    public let host: String
    /// The host exactly as the HTTP client reads it from the URL (case and
    /// a trailing dot kept): the key the pinned address is given under.
    public let requestHost: String
    public let port: Int
    /// The checked address to connect to when `host` is a name; nil when
    /// the host is an address already, or a name the operator allowed
    /// (the HTTP client resolves it itself).
    public let pinnedAddress: IPAddress?

    /// `scheme://host:port`: what logs and errors may show of the URL (its
    /// path and query can carry the receiver's own secret).
    public var origin: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shown):\(port)"
    }
}
