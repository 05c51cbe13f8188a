/// Lower-case hexadecimal, byte by byte (`String(format:)` cost 2% of a W2
/// request, issue 18): digests, selectors, checksums and signatures across
/// Canopy's modules are written by this one function.
public enum Hex {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static let digits: [UInt8] = Array("0123456789abcdef".utf8)
}
