import Foundation

/// What `canopy backup` wrote, read by `canopy restore` before it touches
/// anything: the dump's size and SHA-256, the assets' count, and what the
/// database held when the dump's snapshot was taken, to compare after.
public struct BackupManifest: Codable, Sendable, Equatable {
    public static let fileName = "manifest.json"
    public static let dumpName = "canopy.dump"
    /// The asset store's `blobs/` tree, as FileAssetStore lays it out.
    public static let assetsName = "assets"
    public static let currentFormat = 1

    /// The layout's version: a restore refuses a format it does not know.
    public var format: Int
    public var createdAt: Date
    /// The database it came from (no password).
    public var source: String
    public var serverVersion: String
    /// The newest migration the database had (a restore applies any newer ones).
    public var lastMigration: String?
    public var dumpSize: Int64
    public var dumpSHA256: String
    public var assetFiles: Int
    public var assetBytes: Int64
    /// Rows per table (users, zones, records, shares, participants, uploads)
    /// in the dump's snapshot.
    public var counts: BackupCounts
}

/// Rows per table, in one snapshot: what a restore must give back.
public struct BackupCounts: Codable, Sendable, Equatable, CustomStringConvertible {
    public var users: Int64
    public var zones: Int64
    public var records: Int64
    public var shares: Int64
    public var participants: Int64
    public var uploads: Int64

    static let query = """
        SELECT (SELECT count(*) FROM canopy.users WHERE id <> 0), (SELECT count(*) FROM canopy.zones),
               (SELECT count(*) FROM canopy.records), (SELECT count(*) FROM canopy.shares),
               (SELECT count(*) FROM canopy.participants), (SELECT count(*) FROM canopy.uploads)
        """

    public var description: String {
        "\(users) users, \(zones) zones, \(records) records, \(shares) shares, \(participants) participants, \(uploads) uploads"
    }
}
