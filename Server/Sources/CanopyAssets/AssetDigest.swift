import CanopyEncoding
import Crypto

/// The SHA-256 of an asset's bytes, as 64 lowercase hex digits: the bytes'
/// name in every store (so the same bytes are kept once), the download's
/// `ETag`, and the `sha256` a client checks what it received against.
public struct AssetDigest: Hashable, Sendable, CustomStringConvertible {
    public let hex: String

    /// A digest a client or the database spelled; nil unless 64 lowercase hex digits.
    public init?(hex: String) {
        guard hex.utf8.count == 64, hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            return nil
        }
        self.hex = hex
    }

    init(_ digest: SHA256.Digest) {
        self.hex = Hex.encode(digest)
    }

    public var description: String { hex }
}
