import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its bytes (4 or 16), which is what the
/// outbound check compares: text has too many spellings of one address
/// (`127.1`, `2130706433`, `0x7f.0.0.1`, `::ffff:127.0.0.1`).
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public var isIPv4: Bool { bytes.count == 4 }

    /// The canonical spelling: dotted decimal, or RFC 5952 IPv6 (inet_ntop).
    public var description: String {
        var text = [CChar](repeating: 0, count: 64)
        let family = isIPv4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) }
        guard written != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A canonical address: four decimal parts, or IPv6 as inet_pton reads
    /// it (brackets allowed). Nil for anything else, names included.
    public init?(_ text: String) {
        var host = Substring(text)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if host.contains(":") {
            var address = in6_addr()
            guard !host.contains("%"), inet_pton(AF_INET6, String(host), &address) == 1 else { return nil }
            self.bytes = withUnsafeBytes(of: &address) { Array($0) }
            return
        }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCIIDigit), part.count == 1 || part.first != "0",
                  let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        self.bytes = bytes
    }

    /// An IPv4 address in any form the C library's `inet_aton` accepts, as
    /// a resolver or HTTP client may read a host: one to four parts, each
    /// decimal, octal (`0177`) or hex (`0x7f`), the last filling the rest
    /// (`127.1`, `2130706433`). Nil when the host is not numeric.
    public init?(looseIPv4 text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt32] = []
        for part in parts {
            let lower = part.lowercased()
            let value: UInt32?
            if lower.hasPrefix("0x") {
                value = lower.count == 2 ? 0 : UInt32(lower.dropFirst(2), radix: 16)
            } else if lower.count > 1, lower.hasPrefix("0") {
                value = UInt32(lower.dropFirst(), radix: 8)
            } else {
                value = lower.isEmpty ? nil : UInt32(lower, radix: 10)
            }
            guard let value else { return nil }
            values.append(value)
        }
        var number: UInt32 = 0
        for (index, value) in values.enumerated() {
            let isLast = index == values.count - 1
            if isLast {
                let remaining = 4 - index
                guard remaining == 4 || value < (UInt32(1) << (8 * UInt32(remaining))) else { return nil }
                number |= value
            } else {
                guard value <= 255 else { return nil }
                number |= value << (8 * UInt32(3 - index))
            }
        }
        bytes = [UInt8(number >> 24), UInt8((number >> 16) & 0xff), UInt8((number >> 8) & 0xff), UInt8(number & 0xff)]
    }

    /// True when the first `length` bits equal `prefix`'s.
    func starts(with prefix: [UInt8], length: Int) -> Bool {
        guard prefix.count == bytes.count else { return false }
        for bit in 0..<length {
            let byte = bit / 8, mask = UInt8(0x80) >> UInt8(bit % 8)
            if bytes[byte] & mask != prefix[byte] & mask { return false }
        }
        return true
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension IPAddress {
    /// A connection's address as bytes; nil for a Unix domain socket.
    public init?(_ socketAddress: SocketAddress) {
        switch socketAddress {
        case .v4(let v4):
            var address = v4.address.sin_addr
            self.init(bytes: withUnsafeBytes(of: &address) { Array($0) })
        case .v6(let v6):
            var address = v6.address.sin6_addr
            self.init(bytes: withUnsafeBytes(of: &address) { Array($0) })
        case .unixDomainSocket:
            return nil
        }
    }
}
