/// Where an address leads, for the outbound check: only `publicInternet`
/// may be reached from a user-supplied URL unless the operator allows the
/// destination (`--outbound-allow`). The ranges are IANA's special-purpose
/// registries (RFC 6890 and successors); an IPv6 address that carries an
/// IPv4 one (mapped, compatible, NAT64, 6to4) is judged by the IPv4 one.
public enum AddressScope: String, Sendable, CaseIterable {
    case loopback
    case privateNetwork = "private"
    case linkLocal = "link-local"
    case sharedAddressSpace = "CGNAT"
    case multicast
    case unspecified
    case metadata = "cloud metadata"
    case reserved
    case publicInternet = "public"

    public static func of(_ address: IPAddress) -> AddressScope {
        address.isIPv4 ? ipv4(address) : ipv6(address)
    }

    private static let metadataAddresses: Set<IPAddress> = [
        IPAddress("169.254.169.254")!,   // AWS, GCP, Azure, OpenStack, DigitalOcean
        IPAddress("169.254.170.2")!,     // AWS ECS task credentials
        IPAddress("100.100.100.200")!,   // Alibaba Cloud
        IPAddress("fd00:ec2::254")!,     // AWS over IPv6
    ]

    private static func ipv4(_ address: IPAddress) -> AddressScope {
        if metadataAddresses.contains(address) { return .metadata }
        let ranges: [(String, Int, AddressScope)] = [
            ("0.0.0.0", 8, .unspecified),
            ("10.0.0.0", 8, .privateNetwork),
            ("100.64.0.0", 10, .sharedAddressSpace),
            ("127.0.0.0", 8, .loopback),
            ("169.254.0.0", 16, .linkLocal),
            ("172.16.0.0", 12, .privateNetwork),
            ("192.0.0.0", 24, .reserved),        // IETF protocol assignments
            ("192.0.2.0", 24, .reserved),        // documentation
            ("192.88.99.0", 24, .reserved),      // 6to4 relay anycast
            ("192.168.0.0", 16, .privateNetwork),
            ("198.18.0.0", 15, .reserved),       // benchmarking
            ("198.51.100.0", 24, .reserved),     // documentation
            ("203.0.113.0", 24, .reserved),      // documentation
            ("224.0.0.0", 4, .multicast),
            ("240.0.0.0", 4, .reserved),         // future use and broadcast
        ]
        for (prefix, length, scope) in ranges where address.starts(with: IPAddress(prefix)!.bytes, length: length) {
            return scope
        }
        return .publicInternet
    }

    private static func ipv6(_ address: IPAddress) -> AddressScope {
        let bytes = address.bytes
        if metadataAddresses.contains(address) { return .metadata }
        if bytes.allSatisfy({ $0 == 0 }) { return .unspecified }
        if bytes.dropLast().allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return .loopback }
        let embedded = { (offset: Int) in AddressScope.of(IPAddress(bytes: Array(bytes[offset..<offset + 4]))!) }
        if address.starts(with: IPAddress("::ffff:0:0")!.bytes, length: 96) { return embedded(12) }   // IPv4-mapped
        if address.starts(with: IPAddress("::")!.bytes, length: 96) { return embedded(12) }           // IPv4-compatible
        if address.starts(with: IPAddress("64:ff9b::")!.bytes, length: 96) { return embedded(12) }    // NAT64
        if address.starts(with: IPAddress("2002::")!.bytes, length: 16) { return embedded(2) }        // 6to4
        let ranges: [(String, Int, AddressScope)] = [
            ("64:ff9b:1::", 48, .privateNetwork),  // local-use NAT64
            ("100::", 64, .reserved),              // discard
            ("2001::", 32, .reserved),             // Teredo
            ("2001:db8::", 32, .reserved),         // documentation
            ("fc00::", 7, .privateNetwork),        // unique local (RFC 4193)
            ("fe80::", 10, .linkLocal),
            ("fec0::", 10, .privateNetwork),       // site-local, deprecated
            ("ff00::", 8, .multicast),
        ]
        for (prefix, length, scope) in ranges where address.starts(with: IPAddress(prefix)!.bytes, length: length) {
            return scope
        }
        // Global unicast is 2000::/3; the rest is unassigned.
        return address.starts(with: IPAddress("2000::")!.bytes, length: 3) ? .publicInternet : .reserved
    }
}
