import Foundation
import CanopyRequestStore

/// A size as an operator writes it: `500000`, `200MB`, `1.5GiB`,
/// `unlimited`. Decimal units are powers of 1000 (KB, MB, GB, TB),
/// binary ones of 1024 (KiB, MiB, GiB, TiB), as `du --si` and `du` say.
public enum ByteSize {
    /// nil for `unlimited`.
    public static func parse(_ text: String) throws -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased() == "unlimited" || trimmed.lowercased() == "none" { return nil }
        let digits = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmed.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        let multipliers: [String: Double] = [
            "": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
            "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824, "tib": 1_099_511_627_776,
        ]
        guard let number = Double(digits), let multiplier = multipliers[unit] else {
            throw StoreError(.invalidInput, "'\(text)' is not a size: write bytes (500000), with a unit (200MB, 1.5GiB: KB MB GB TB are powers of 1000, KiB MiB GiB TiB of 1024), or unlimited")
        }
        let bytes = (number * multiplier).rounded()
        guard bytes >= 0, bytes < 9.2e18 else {
            throw StoreError(.invalidInput, "'\(text)' is out of range")
        }
        return Int64(bytes)
    }

    /// `1.5 GiB (1610612736 bytes)`, or `unlimited`.
    public static func describe(_ bytes: Int64?) -> String {
        guard let bytes else { return "unlimited" }
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) bytes" }
        let rounded = (value * 10).rounded() / 10
        return "\(rounded.formatted()) \(units[unit]) (\(bytes) bytes)"
    }
}
