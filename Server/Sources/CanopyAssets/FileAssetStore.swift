import Crypto
import Foundation
import NIOCore
import NIOFileSystem

/// Assets' bytes as files under one directory:
///
///     <directory>/blobs/<first two hex digits>/<sha256>   the bytes, read-only
///     <directory>/incoming/<uuid>.part                     writes in progress
///
/// A write goes to `incoming/`, is hashed as it streams, fsynced, then renamed
/// to its digest's name and its directory fsynced: a crash leaves at most a
/// `.part` file, which no record names and the collector removes, never a
/// half file under a digest. The same bytes uploaded twice are kept once.
/// Back it up by copying `blobs/` (files never change once named).
public struct FileAssetStore: AssetStore {
    public let directory: FilePath
    var blobs: FilePath { directory.appending("blobs") }
    var incoming: FilePath { directory.appending("incoming") }

    /// The store in `directory`, made (with its subdirectories) when missing.
    public init(directory: String) async throws {
        self.directory = FilePath(directory)
        do {
            for path in [blobs, incoming] {
                try await FileSystem.shared.createDirectory(at: path, withIntermediateDirectories: true)
            }
        } catch let error as FileSystemError where error.code == .fileAlreadyExists {
        } catch {
            throw AssetError(.storage, "cannot make the asset directory \(directory): \(Self.describe(error))")
        }
    }

    func path(of digest: AssetDigest) -> FilePath {
        blobs.appending(String(digest.hex.prefix(2))).appending(digest.hex)
    }

    public func store<Body: AsyncSequence & Sendable>(_ body: Body, limit: Int64) async throws -> StoredAsset
    where Body.Element == ByteBuffer {
        let temporary = incoming.appending(UUID().uuidString.lowercased() + ".part")
        var hasher = SHA256()
        var size: Int64 = 0
        do {
            try await FileSystem.shared.withFileHandle(
                forWritingAt: temporary,
                options: OpenOptions.Write(existingFile: .none, newFile: .init(transactionalCreation: false))
            ) { handle in
                for try await chunk in body {
                    guard size + Int64(chunk.readableBytes) <= limit else {
                        throw AssetError(.tooLarge(limit: limit), "the asset is larger than the limit of \(limit) bytes")
                    }
                    chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                    try await handle.write(contentsOf: chunk, toAbsoluteOffset: size)
                    size += Int64(chunk.readableBytes)
                }
                try await handle.synchronize()
            }
        } catch {
            _ = try? await FileSystem.shared.removeItem(at: temporary)
            if let error = error as? AssetError { throw error }
            throw AssetError(.storage, "cannot write the asset: \(Self.describe(error))")
        }
        let stored = StoredAsset(digest: AssetDigest(hasher.finalize()), size: size)
        let final = path(of: stored.digest)
        do {
            if try await FileSystem.shared.info(forFileAt: final, infoAboutSymbolicLink: false) != nil {
                _ = try await FileSystem.shared.removeItem(at: temporary)
                // Uploaded again: the collector's grace period starts anew.
                try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: final.string)
                return stored
            }
            let folder = final.removingLastComponent()
            do {
                try await FileSystem.shared.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch let error as FileSystemError where error.code == .fileAlreadyExists {
            }
            try await FileSystem.shared.moveItem(at: temporary, to: final)
            try await FileSystem.shared.withDirectoryHandle(atPath: folder) { try await $0.synchronize() }
        } catch {
            _ = try? await FileSystem.shared.removeItem(at: temporary)
            throw AssetError(.storage, "cannot keep the asset \(stored.digest): \(Self.describe(error))")
        }
        return stored
    }

    public func size(of digest: AssetDigest) async throws -> Int64? {
        do {
            return try await FileSystem.shared.info(forFileAt: path(of: digest), infoAboutSymbolicLink: false)?.size
        } catch {
            throw AssetError(.storage, "cannot read the asset \(digest): \(Self.describe(error))")
        }
    }

    public func read(_ digest: AssetDigest, range: Range<Int64>, chunk: (ByteBuffer) async throws -> Void) async throws {
        try await FileSystem.shared.withFileHandle(forReadingAt: path(of: digest)) { handle in
            for try await piece in handle.readChunks(in: range, chunkLength: .kibibytes(64)) {
                try await chunk(piece)
            }
        }
    }

    public func remove(_ digest: AssetDigest) async throws {
        do {
            _ = try await FileSystem.shared.removeItem(at: path(of: digest))
        } catch {
            throw AssetError(.storage, "cannot remove the asset \(digest): \(Self.describe(error))")
        }
    }

    public func inventory() async throws -> AssetInventory {
        do {
            var stored: [(digest: AssetDigest, written: Date)] = []
            try await FileSystem.shared.withDirectoryHandle(atPath: blobs) { folder in
                for try await entry in folder.listContents(recursive: true) where entry.type == .regular {
                    guard let name = entry.path.lastComponent?.string, let digest = AssetDigest(hex: name),
                          let info = try await FileSystem.shared.info(forFileAt: entry.path, infoAboutSymbolicLink: true)
                    else { continue }
                    stored.append((digest, Self.date(info.lastDataModificationTime)))
                }
            }
            var incomplete: [(name: String, started: Date)] = []
            try await FileSystem.shared.withDirectoryHandle(atPath: incoming) { folder in
                for try await entry in folder.listContents() where entry.type == .regular {
                    guard let name = entry.path.lastComponent?.string,
                          let info = try await FileSystem.shared.info(forFileAt: entry.path, infoAboutSymbolicLink: true)
                    else { continue }
                    incomplete.append((name, Self.date(info.lastDataModificationTime)))
                }
            }
            return AssetInventory(stored: stored, incomplete: incomplete)
        } catch {
            throw AssetError(.storage, "cannot list the asset directory \(directory): \(Self.describe(error))")
        }
    }

    public func removeIncomplete(_ name: String) async throws {
        guard !name.contains("/"), name.hasSuffix(".part") else { return }
        do {
            _ = try await FileSystem.shared.removeItem(at: incoming.appending(name))
        } catch {
            throw AssetError(.storage, "cannot remove the incomplete write \(name): \(Self.describe(error))")
        }
    }

    static func date(_ time: FileInfo.Timespec) -> Date {
        Date(timeIntervalSince1970: TimeInterval(time.seconds) + TimeInterval(time.nanoseconds) / 1e9)
    }

    static func describe(_ error: any Error) -> String {
        (error as? FileSystemError).map { "\($0.message)" } ?? "\(error)"
    }
}
