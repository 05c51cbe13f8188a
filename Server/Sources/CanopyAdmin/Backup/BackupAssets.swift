import CanopyRequestStore
import Foundation

/// Assets' bytes in and out of a backup. The store keeps each asset as
/// `blobs/<first two hex digits>/<sha256>` (FileAssetStore), a name that is
/// its content's hash, so a copy can be checked file by file.
enum BackupAssets {
    /// Where the store keeps `digest`, under `directory`.
    static func path(of digest: String, in directory: String) -> String {
        "\(directory)/blobs/\(digest.prefix(2))/\(digest)"
    }

    /// Copies the assets the database references from the store in `store`
    /// to the backup's `assets/`; fails, naming them, when some are missing.
    static func save(_ digests: Set<String>, from store: String, to backup: String) throws -> (files: Int, bytes: Int64) {
        let missing = digests.filter { !FileManager.default.fileExists(atPath: path(of: $0, in: store)) }.sorted()
        guard missing.isEmpty else {
            throw StoreError(.notFound, """
                \(missing.count) asset(s) the records reference are not in \(store) (first: \(missing[0])): \
                give the gateway's --asset-dir, or --no-assets to back up the database alone
                """)
        }
        var bytes: Int64 = 0
        for digest in digests.sorted() {
            let target = path(of: digest, in: backup)
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            bytes += try FileDigest.copy(path(of: digest, in: store), to: target, temporary: target + ".part", expected: digest).size
        }
        return (digests.count, bytes)
    }

    /// Every asset file in a backup, by digest.
    static func list(in backup: String) throws -> [String] {
        let blobs = "\(backup)/blobs"
        guard FileManager.default.fileExists(atPath: blobs) else { return [] }
        var digests: [String] = []
        for prefix in try FileManager.default.contentsOfDirectory(atPath: blobs).sorted() {
            for name in try FileManager.default.contentsOfDirectory(atPath: "\(blobs)/\(prefix)").sorted() {
                guard name.count == 64, name.hasPrefix(prefix), name.allSatisfy(\.isHexDigit) else {
                    throw StoreError(.invalidInput, "\(blobs)/\(prefix)/\(name) is not an asset (a SHA-256 name) of a backup")
                }
                digests.append(name)
            }
        }
        return digests
    }

    /// Copies a backup's assets into the store in `store`, each through the
    /// store's `incoming/` and checked against its name; one already there
    /// with the same size is kept. Returns (copied, already there, bytes).
    static func restore(from backup: String, to store: String, progress: (String) -> Void) throws -> (copied: Int, present: Int, bytes: Int64) {
        let digests = try list(in: backup)
        let incoming = "\(store)/incoming"
        try FileManager.default.createDirectory(atPath: incoming, withIntermediateDirectories: true)
        var copied = 0, present = 0
        var bytes: Int64 = 0
        for (index, digest) in digests.enumerated() {
            let source = path(of: digest, in: backup)
            let target = path(of: digest, in: store)
            let size = (try FileManager.default.attributesOfItem(atPath: source)[.size] as? NSNumber)?.int64Value ?? -1
            if let existing = try? FileManager.default.attributesOfItem(atPath: target)[.size] as? NSNumber, existing.int64Value == size {
                present += 1
                continue
            }
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let temporary = "\(incoming)/\(UUID().uuidString.lowercased()).part"
            bytes += try FileDigest.copy(source, to: target, temporary: temporary, expected: digest).size
            copied += 1
            if (index + 1) % 1000 == 0 { progress("  \(index + 1) of \(digests.count) assets") }
        }
        return (copied, present, bytes)
    }
}
