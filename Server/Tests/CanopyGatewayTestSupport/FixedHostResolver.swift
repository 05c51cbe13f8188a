import CanopyOutbound
import Synchronization
import Testing

/// A resolver the test controls: names map to the addresses it was told
/// (and can be told again, for DNS rebinding); any other name does not
/// resolve. No test sends a DNS query.
final class FixedHostResolver: HostResolver {
    private let names: Mutex<[String: [IPAddress]]>
    private let asked = Mutex<[String]>([])

    init(_ names: [String: [String]] = [:]) {
        self.names = Mutex(names.mapValues { $0.map { IPAddress($0)! } })
    }

    /// Points `name` elsewhere from now on.
    func set(_ name: String, _ addresses: [String]) {
        names.withLock { $0[name] = addresses.map { IPAddress($0)! } }
    }

    /// Every name asked, in order.
    var questions: [String] { asked.withLock { $0 } }

    func addresses(of host: String) async throws -> [IPAddress] {
        asked.withLock { $0.append(host) }
        return names.withLock { $0[host] ?? [] }
    }
}

extension OutboundPolicy {
    /// What the push tests run with: loopback allowed (their receivers
    /// listen there), names resolved by `resolver` only, and a connection
    /// anywhere but loopback stopped and failed before it is attempted.
    static func loopbackForTests(resolver: FixedHostResolver = FixedHostResolver()) -> OutboundPolicy {
        OutboundPolicy(
            allowed: ["127.0.0.0/8", "::1", "localhost"].map { try! OutboundRule(parsing: $0) }, resolver: resolver,
            beforeConnecting: { destination in try Self.onlyLoopback(destination) }
        )
    }

    /// Fails the test, and stops the request, unless it goes to loopback.
    static func onlyLoopback(_ destination: OutboundDestination) throws {
        if destination.pinnedAddress == nil, destination.host == "localhost" { return }
        guard let address = destination.pinnedAddress ?? IPAddress(destination.host), AddressScope.of(address) == .loopback else {
            Issue.record("a connection beyond loopback was about to be attempted: \(destination.origin)")
            throw OutboundError(.addressRefused, "a test may not connect to \(destination.origin)")
        }
    }
}
