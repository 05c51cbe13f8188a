import Foundation
import NIOCore

/// Bytes a store holds: their digest and length.
public struct StoredAsset: Sendable, Equatable {
    public var digest: AssetDigest
    public var size: Int64

    public init(digest: AssetDigest, size: Int64) {
        self.digest = digest
        self.size = size
    }
}

/// Where assets' bytes live, named by their SHA-256. The database knows
/// which records and uploads hold which digest; a store only keeps bytes.
/// ``FileAssetStore`` keeps them in a directory; a second store (S3-style
/// object storage) implements the same five operations: a streamed,
/// hashed, size-limited write that keeps nothing on failure; a ranged
/// streamed read; a size; removals; and a listing for the collector.
public protocol AssetStore: Sendable {
    /// Streams `body` into the store while hashing it, keeping at most
    /// `limit` bytes: past the limit it throws ``AssetError/Kind/tooLarge``
    /// and keeps nothing, as on any other failure. Bytes already held are
    /// not written twice. Returns once the bytes are durable.
    func store<Body: AsyncSequence & Sendable>(_ body: Body, limit: Int64) async throws -> StoredAsset
    where Body.Element == ByteBuffer

    /// The length of the bytes of `digest`, or nil when the store does not hold them.
    func size(of digest: AssetDigest) async throws -> Int64?

    /// Hands `range` of the bytes of `digest` to `chunk`, in order, a piece at a time.
    func read(_ digest: AssetDigest, range: Range<Int64>, chunk: (ByteBuffer) async throws -> Void) async throws

    /// Forgets the bytes of `digest` (nothing when it does not hold them).
    func remove(_ digest: AssetDigest) async throws

    /// Every digest held, with when its bytes were written, and the
    /// incomplete writes (a crash's leftovers) with when they were started.
    func inventory() async throws -> AssetInventory

    /// Forgets an incomplete write the inventory listed.
    func removeIncomplete(_ name: String) async throws
}

/// What a store holds, for the collector.
public struct AssetInventory: Sendable {
    public var stored: [(digest: AssetDigest, written: Date)]
    /// Writes never finished (the process stopped mid-upload); never named by a record.
    public var incomplete: [(name: String, started: Date)]

    public init(stored: [(digest: AssetDigest, written: Date)], incomplete: [(name: String, started: Date)]) {
        self.stored = stored
        self.incomplete = incomplete
    }
}
