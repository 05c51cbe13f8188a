/// Why storing or reading an asset's bytes failed. The gateway maps each
/// kind to an HTTP status in one place (413 for ``Kind/tooLarge``, 500 for
/// ``Kind/storage``).
public struct AssetError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The body went past the limit; nothing was kept.
        case tooLarge(limit: Int64)
        /// The store could not write, read or remove (disk full, permissions…).
        case storage
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
