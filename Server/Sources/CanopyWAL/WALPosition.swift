/// A position in PostgreSQL's write-ahead log (`pg_lsn`, written `16/B374D848`):
/// how far a server has written or a replica has replayed. Read-your-writes
/// across replicas compares these (docs/DEPLOYMENT.md): the gateway, change
/// tokens and the `Canopy-Position` header carry them, so parsing and
/// printing live here, once for every module.
public struct WALPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var value: UInt64

    public init(_ value: UInt64) {
        self.value = value
    }

    /// Parses PostgreSQL's text form: two hexadecimal numbers of at most
    /// eight digits, the high and low 32 bits, joined by `/`.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...8).contains(parts[0].count), (1...8).contains(parts[1].count),
              let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16)
        else { return nil }
        value = high << 32 | low
    }

    public var description: String {
        String(value >> 32, radix: 16, uppercase: true) + "/" + String(value & 0xFFFF_FFFF, radix: 16, uppercase: true)
    }

    public static func < (lhs: WALPosition, rhs: WALPosition) -> Bool { lhs.value < rhs.value }
}

extension Optional where Wrapped == WALPosition {
    /// The later of two positions, either of which may be unknown.
    public func later(_ other: WALPosition?) -> WALPosition? {
        switch (self, other) {
        case (nil, let position), (let position, nil): return position
        case (let a?, let b?): return Swift.max(a, b)
        }
    }
}
