import CanopyAssets
import CanopyTestSupport
import Foundation
import NIOCore
import Testing

/// The file store on a real directory: what it keeps, what it never keeps,
/// and reads by range. Digests are checked against `sha256sum`, not against
/// the hashing the store itself uses.
@Suite("Asset storage in a directory")
struct FileAssetStoreTests {
    /// A fresh store in a temporary directory.
    func store() async throws -> (FileAssetStore, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-assets-\(UUID().uuidString)")
        return (try await FileAssetStore(directory: directory.path), directory)
    }

    /// `bytes` as an upload body arrives: chunks of `chunkSize`.
    func body(_ bytes: [UInt8], chunkSize: Int = 16_384, failAfter: Int? = nil) -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            var offset = 0
            var sent = 0
            while offset < bytes.count {
                if let failAfter, sent == failAfter {
                    continuation.finish(throwing: CancellationError())
                    return
                }
                let end = min(offset + chunkSize, bytes.count)
                continuation.yield(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
                sent += 1
            }
            continuation.finish()
        }
    }

    func files(under directory: URL) -> [String] { regularFiles(under: directory) }

    static let bytes: [UInt8] = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) }

    @Test("streamed bytes are kept once under their SHA-256, durable, and read back by range")
    func storeAndRead() async throws {
        let (store, directory) = try await store()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stored = try await store.store(body(Self.bytes), limit: 1_000_000)
        #expect(stored.size == Int64(Self.bytes.count))
        let path = directory.appendingPathComponent("blobs/\(stored.digest.hex.prefix(2))/\(stored.digest.hex)").path
        #expect(try sha256sum(file: path) == stored.digest.hex)
        #expect(files(under: directory) == ["blobs/\(stored.digest.hex.prefix(2))/\(stored.digest.hex)"], "nothing left in incoming/")

        let again = try await store.store(body(Self.bytes, chunkSize: 1_000), limit: 1_000_000)
        #expect(again == stored)
        #expect(files(under: directory).count == 1, "the same bytes are kept once")
        #expect(try await store.size(of: stored.digest) == Int64(Self.bytes.count))

        var slice: [UInt8] = []
        try await store.read(stored.digest, range: 100_000..<200_001) { slice += Array(buffer: $0) }
        #expect(slice == Array(Self.bytes[100_000..<200_001]))
        var whole: [UInt8] = []
        try await store.read(stored.digest, range: 0..<stored.size) { whole += Array(buffer: $0) }
        #expect(whole == Self.bytes)
    }

    @Test("past the limit, or when the body fails, nothing is kept")
    func nothingKeptOnFailure() async throws {
        let (store, directory) = try await store()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            _ = try await store.store(body(Self.bytes), limit: 200_000)
            Issue.record("stored past the limit")
        } catch let error as AssetError {
            #expect(error.kind == .tooLarge(limit: 200_000), "\(error)")
        }
        do {
            _ = try await store.store(body(Self.bytes, failAfter: 5), limit: 1_000_000)
            Issue.record("stored a body that failed")
        } catch {
            #expect(error is AssetError, "\(error)")
        }
        #expect(files(under: directory).isEmpty, "\(files(under: directory))")
        let exact = try await store.store(body(Array(Self.bytes[0..<200_000])), limit: 200_000)
        #expect(exact.size == 200_000, "exactly the limit is kept")
        #expect(try await store.size(of: AssetDigest(hex: String(repeating: "0", count: 64))!) == nil)
    }

    @Test("the inventory lists what is kept and a crash's incomplete writes; both can be removed")
    func inventory() async throws {
        let (store, directory) = try await store()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stored = try await store.store(body(Self.bytes), limit: 1_000_000)
        let leftover = directory.appendingPathComponent("incoming/0c1d2e3f.part")
        try Data([1, 2, 3]).write(to: leftover)
        let listed = try await store.inventory()
        #expect(listed.stored.map(\.digest) == [stored.digest])
        #expect(listed.incomplete.map(\.name) == ["0c1d2e3f.part"])
        #expect(abs(listed.stored[0].written.timeIntervalSinceNow) < 60)
        try await store.removeIncomplete("0c1d2e3f.part")
        try await store.remove(stored.digest)
        #expect(files(under: directory).isEmpty)
        #expect(AssetDigest(hex: "ABC") == nil)
        #expect(AssetDigest(hex: String(repeating: "A", count: 64)) == nil, "digests are lowercase")
    }
}
