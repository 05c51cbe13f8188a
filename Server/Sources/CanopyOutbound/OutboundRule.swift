import Foundation

/// One destination the operator allows although the outbound check would
/// refuse it (`--outbound-allow`): a host name (`hooks.internal`, matched
/// exactly, case-insensitively), an address (`127.0.0.1`, `::1`) or a range
/// (`10.1.0.0/16`, `fd00::/8`). An allowed destination may use any port
/// and plain http: the operator vouches for it.
public enum OutboundRule: Sendable, Hashable, CustomStringConvertible {
    case host(String)
    case range(IPAddress, prefixLength: Int)

    /// Reads one rule, with the error an operator can act on.
    public init(parsing text: String) throws(OutboundError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let slash = trimmed.firstIndex(of: "/") {
            let addressText = String(trimmed[..<slash]), lengthText = trimmed[trimmed.index(after: slash)...]
            guard let address = IPAddress(addressText), let length = Int(lengthText), length >= 0, length <= address.bytes.count * 8 else {
                throw OutboundError(.malformedURL, "'\(text)' is not a range: write an address, a slash and a prefix length (10.1.0.0/16, fd00::/8)")
            }
            self = .range(address, prefixLength: length)
        } else if let address = IPAddress(trimmed) {
            self = .range(address, prefixLength: address.bytes.count * 8)
        } else {
            let name = OutboundRule.normalized(trimmed)
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }) else {
                throw OutboundError(.malformedURL, "'\(text)' is not a host name, an address or a range")
            }
            self = .host(name)
        }
    }

    func allows(host: String) -> Bool {
        if case .host(let name) = self { return name == OutboundRule.normalized(host) }
        return false
    }

    func allows(_ address: IPAddress) -> Bool {
        guard case .range(let base, let length) = self else { return false }
        return address.starts(with: base.bytes, length: length)
    }

    /// Lower case, without the root's trailing dot.
    static func normalized(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    public var description: String {
        switch self {
        case .host(let name): name
        case .range(let address, let length): length == address.bytes.count * 8 ? "\(address)" : "\(address)/\(length)"
        }
    }
}
