import Foundation

/// The owner name that stands for the signed-in user, as `CKCurrentUserDefaultName`.
public let CurrentUserDefaultName = "__defaultOwner__"

/// A zone (CKRecordZone): a named bucket of records owned by one user, the
/// unit of a zone-wide share and of a change feed.
public struct RecordZone: Sendable, Hashable {
    /// A zone's identity (CKRecordZone.ID): its name and its owner's
    /// `userRecordName` (`CurrentUserDefaultName` for the caller's own).
    public struct ID: Sendable, Hashable, Codable, CustomStringConvertible {
        public let zoneName: String
        public let ownerName: String

        public init(zoneName: String, ownerName: String = CurrentUserDefaultName) {
            self.zoneName = zoneName
            self.ownerName = ownerName
        }

        /// The implicit zone every user has, which can never be shared.
        public static let `default` = ID(zoneName: "_defaultZone")

        public var description: String { "\(zoneName) (\(ownerName))" }
    }

    public let zoneID: ID
    /// Set when the zone has a zone-wide share (its URL).
    public internal(set) var shareURL: URL?

    public init(zoneName: String) {
        self.zoneID = ID(zoneName: zoneName)
    }

    public init(zoneID: ID) {
        self.zoneID = zoneID
    }

    init(zoneID: ID, shareURL: URL?) {
        self.zoneID = zoneID
        self.shareURL = shareURL
    }
}
