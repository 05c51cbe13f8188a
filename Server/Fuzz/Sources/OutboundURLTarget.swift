import CanopyOutbound
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A webhook `url` or Web Push `endpoint` through the outbound check
/// (docs/SECURITY.md, "Outbound requests"), with a resolver that answers
/// every name with a public address and, for names starting `in`, a
/// private one too. Properties: a URL that passes names a public address
/// (or pins one) on port 443 over https; a host the C library reads as an
/// IPv4 address (`inet_aton`, what a resolver does with `2130706433`) is
/// read as the same address by the check, and one `inet_pton` reads is
/// read alike too, so no spelling means one address to the check and
/// another to the connection.
struct OutboundURLTarget: FuzzTarget {
    static let name = "outbound-url"

    struct Resolver: HostResolver {
        func addresses(of host: String) async throws -> [IPAddress] {
            host.hasPrefix("in") ? [IPAddress("93.184.215.14")!, IPAddress("10.0.0.5")!] : [IPAddress("93.184.215.14")!]
        }
    }

    static let policy = OutboundPolicy(resolver: Resolver())

    func run(_ bytes: UnsafeRawBufferPointer) {
        let text = bytes.text
        // The host parsers against the C library's, for what a URL's host
        // can hold (inet_aton stops at whitespace and ignores the rest).
        if !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f }) {
            var v4 = in_addr()
            if inet_aton(text, &v4) == 1 {
                let expected = withUnsafeBytes(of: &v4) { Array($0) }
                require(IPAddress(looseIPv4: text)?.bytes == expected, "inet_aton reads '\(text)' as \(expected), the check as \(String(describing: IPAddress(looseIPv4: text)))")
            }
            var v6 = in6_addr()
            if inet_pton(AF_INET6, text, &v6) == 1 {
                let expected = withUnsafeBytes(of: &v6) { Array($0) }
                require(IPAddress(text)?.bytes == expected, "inet_pton reads '\(text)' as IPv6 \(expected), the check does not")
            }
            if let address = IPAddress(text) {
                require(IPAddress("\(address)") == address, "\(address) does not read back")
                _ = AddressScope.of(address)
            }
        }
        // The whole check, run to completion on this thread.
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: Result<OutboundDestination, OutboundError>?
        Task {
            do throws(OutboundError) {
                outcome = .success(try await Self.policy.destination(for: text))
            } catch {
                outcome = .failure(error)
            }
            done.signal()
        }
        done.wait()
        guard case .success(let destination)? = outcome else { return }
        require(destination.scheme == "https" && destination.port == 443, "\(text) passed as \(destination.origin)")
        let address = destination.pinnedAddress ?? IPAddress(destination.host)
        require(address.map { AddressScope.of($0) == .publicInternet } ?? false, "\(text) passed to \(String(describing: address))")
        require(!destination.host.hasPrefix("in") || destination.pinnedAddress == nil && IPAddress(destination.host) != nil,
                "\(text): a name with a private address among its addresses passed")
    }
}
