import CanopyEncoding
import CanopyRequestStore
import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Files read and copied in pieces, hashed as they go: a backup's dump and
/// assets are checked by SHA-256 before a restore uses them.
enum FileDigest {
    static let chunk = 1 << 20

    /// The file's SHA-256 (lowercase hex) and size.
    static func sha256(of path: String) throws -> (hex: String, size: Int64) {
        guard let input = FileHandle(forReadingAtPath: path) else {
            throw StoreError(.notFound, "cannot read \(path)")
        }
        defer { try? input.close() }
        var hasher = SHA256()
        var size: Int64 = 0
        while let data = try input.read(upToCount: chunk), !data.isEmpty {
            hasher.update(data: data)
            size += Int64(data.count)
        }
        return (Hex.encode(hasher.finalize()), size)
    }

    /// Copies `source` to `destination` through a temporary name (renamed
    /// only when whole, flushed, and hashing to `expected` when given);
    /// returns the copy's SHA-256 and size.
    static func copy(_ source: String, to destination: String, temporary: String, expected: String? = nil) throws -> (hex: String, size: Int64) {
        guard let input = FileHandle(forReadingAtPath: source) else {
            throw StoreError(.notFound, "cannot read \(source)")
        }
        defer { try? input.close() }
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
              let output = FileHandle(forWritingAtPath: temporary) else {
            throw StoreError(.invalidConfiguration, "cannot write \(temporary)")
        }
        var hasher = SHA256()
        var size: Int64 = 0
        let digest: String
        do {
            while let data = try input.read(upToCount: chunk), !data.isEmpty {
                hasher.update(data: data)
                try output.write(contentsOf: data)
                size += Int64(data.count)
            }
            try output.synchronize()
            try output.close()
            digest = Hex.encode(hasher.finalize())
            if let expected, digest != expected {
                try? FileManager.default.removeItem(atPath: temporary)
                throw StoreError(.invalidInput, "\(source) is damaged: its bytes hash to \(digest), not \(expected) as its name says")
            }
            // rename(2) replaces an existing file in one step.
            guard rename(temporary, destination) == 0 else {
                throw StoreError(.invalidConfiguration, "cannot move \(temporary) to \(destination): \(String(cString: strerror(errno)))")
            }
        } catch {
            try? output.close()
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
        return (digest, size)
    }
}
