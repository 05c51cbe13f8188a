import Foundation

/// What one collection removed.
public struct CollectionReport: Sendable {
    /// Bytes no record and no live upload held, written before the grace period.
    public var removed: [StoredAsset] = []
    /// Writes a stopped process never finished, started before the grace period.
    public var removedIncomplete: [String] = []
    /// Bytes kept because something references them.
    public var keptReferenced = 0
    /// Bytes kept because they were written within the grace period.
    public var keptRecent = 0

    public var freedBytes: Int64 { removed.reduce(0) { $0 + $1.size } }
}

/// Removes from a store the bytes nothing references any more. What
/// references bytes is the database's business: the caller passes the
/// digests that records and live uploads hold. Only bytes written (or
/// uploaded again) before `graceCutoff` are candidates, so an upload whose
/// bytes are stored but whose row is not yet committed is never lost.
public enum AssetCollector {
    public static func collect(
        store: any AssetStore, referenced: Set<AssetDigest>, graceCutoff: Date, dryRun: Bool = false
    ) async throws -> CollectionReport {
        var report = CollectionReport()
        let inventory = try await store.inventory()
        for (digest, written) in inventory.stored {
            if referenced.contains(digest) {
                report.keptReferenced += 1
            } else if written >= graceCutoff {
                report.keptRecent += 1
            } else {
                let size = try await store.size(of: digest) ?? 0
                if !dryRun { try await store.remove(digest) }
                report.removed.append(StoredAsset(digest: digest, size: size))
            }
        }
        for (name, started) in inventory.incomplete where started < graceCutoff {
            if !dryRun { try await store.removeIncomplete(name) }
            report.removedIncomplete.append(name)
        }
        return report
    }
}
