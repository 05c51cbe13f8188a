import Foundation

/// Which user-supplied URLs (webhooks, Web Push endpoints) Canopy calls:
/// https on an allowed port (443 by default) to a host whose every address
/// is on the public internet. Loopback, private (RFC 1918, RFC 4193),
/// link-local, CGNAT, multicast, unspecified, reserved and cloud metadata
/// addresses are refused, however the host spells them, unless the
/// operator allows the destination (`--outbound-allow`). Checked when a
/// device registers and again before every request, whose connection goes
/// only to the address checked (docs/SECURITY.md, "Outbound requests").
public struct OutboundPolicy: Sendable {
    public var allowed: [OutboundRule]
    public var ports: Set<Int>
    public var resolver: any HostResolver
    /// Called with each destination that passed, just before the request
    /// is sent. Tests make it fail (and throw) where no connection may be
    /// attempted; nil in `canopy serve`.
    public var beforeConnecting: (@Sendable (OutboundDestination) throws -> Void)?

    public init(
        allowed: [OutboundRule] = [], ports: Set<Int> = [443], resolver: any HostResolver = SystemHostResolver(),
        beforeConnecting: (@Sendable (OutboundDestination) throws -> Void)? = nil
    ) {
        self.allowed = allowed
        self.ports = ports
        self.resolver = resolver
        self.beforeConnecting = beforeConnecting
    }

    /// Checks `text` and answers where to connect, or throws why not.
    public func destination(for text: String) async throws(OutboundError) -> OutboundDestination {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let rawHost = url.host, !rawHost.isEmpty else {
            throw OutboundError(.malformedURL, "not an absolute http or https URL with a host")
        }
        guard url.user == nil, url.password == nil else {
            throw OutboundError(.malformedURL, "a user name or password in the URL is not allowed")
        }
        var requestHost = rawHost
        if requestHost.hasPrefix("["), requestHost.hasSuffix("]") { requestHost = String(requestHost.dropFirst().dropLast()) }
        let host = OutboundRule.normalized(requestHost)
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let shown = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)"

        let literal = IPAddress(host)
        var addresses: [IPAddress]
        var pinned: IPAddress?
        if let literal {
            addresses = [literal]
        } else if let loose = IPAddress(looseIPv4: host) {
            // 2130706433, 0x7f.1, 0177.0.0.1: C resolvers read these as
            // addresses; say which, and refuse the spelling even when public.
            guard AddressScope.of(loose) == .publicInternet || allowed.contains(where: { $0.allows(loose) }) else {
                throw OutboundError(.addressRefused, "\(shown): \(host) is \(loose), a \(AddressScope.of(loose).rawValue) address")
            }
            throw OutboundError(.malformedURL, "\(shown): write the address \(loose) as four decimal numbers")
        } else if allowed.contains(where: { $0.allows(host: host) }) {
            return OutboundDestination(url: text, scheme: scheme, host: host, requestHost: requestHost, port: port, pinnedAddress: nil)
        } else {
            do {
                addresses = try await resolver.addresses(of: host)
            } catch {
                addresses = []
            }
            guard let first = addresses.first else {
                throw OutboundError(.unresolvable, "\(shown): \(host) does not resolve, so it cannot be checked")
            }
            pinned = first
        }
        let vouched = addresses.allSatisfy { address in allowed.contains { $0.allows(address) } }
        if !vouched {
            for address in addresses where !allowed.contains(where: { $0.allows(address) }) {
                let scope = AddressScope.of(address)
                guard scope == .publicInternet else {
                    let what = literal == nil ? "\(host) resolves to \(address), " : ""
                    throw OutboundError(.addressRefused, "\(shown): \(what)a \(scope.rawValue) address, inside the operator's network (--outbound-allow admits it)")
                }
            }
            guard scheme == "https" else {
                throw OutboundError(.schemeRefused, "\(shown): only https is called, except to destinations the operator allows")
            }
            guard ports.contains(port) else {
                let list = ports.sorted().map(String.init).joined(separator: ", ")
                throw OutboundError(.portRefused, "\(shown): port \(port) is not allowed (allowed: \(list); --outbound-ports)")
            }
        }
        return OutboundDestination(url: text, scheme: scheme, host: host, requestHost: requestHost, port: port, pinnedAddress: pinned)
    }
}
