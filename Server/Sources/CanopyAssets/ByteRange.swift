/// One `Range: bytes=…` header against a body of `size` bytes (RFC 9110
/// §14.1.2): a single range, or the whole body for what it does not serve
/// (several ranges, other units), or unsatisfiable.
public enum ByteRange: Equatable, Sendable {
    case whole
    case part(Range<Int64>)
    case unsatisfiable

    public static func parse(_ header: String, size: Int64) -> ByteRange {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let sides = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard sides.count == 2 else { return .whole }
        if sides[0].isEmpty {
            guard let suffix = Int64(sides[1]), suffix > 0 else { return .unsatisfiable }
            return size == 0 ? .unsatisfiable : .part(max(0, size - suffix)..<size)
        }
        guard let first = Int64(sides[0]) else { return .whole }
        let last = sides[1].isEmpty ? size - 1 : (Int64(sides[1]) ?? -1)
        guard last >= first else { return sides[1].isEmpty ? .unsatisfiable : .whole }
        guard first < size else { return .unsatisfiable }
        return .part(first..<(min(last, size - 1) + 1))
    }
}
