import Foundation

extension Record {
    /// A record's identity (CKRecord.ID): its name, unique in its zone.
    public struct ID: Sendable, Hashable, Codable, CustomStringConvertible {
        public let recordName: String
        public let zoneID: RecordZone.ID

        public init(recordName: String = UUID().uuidString, zoneID: RecordZone.ID = .default) {
            self.recordName = recordName
            self.zoneID = zoneID
        }

        public var description: String { "\(recordName) in \(zoneID)" }
    }

    /// A pointer from one record to another in the same zone
    /// (CKRecord.Reference); `.deleteSelf` deletes the holder with the target.
    public struct Reference: Sendable, Hashable {
        public enum Action: String, Sendable {
            case none = "NONE"
            case deleteSelf = "DELETE_SELF"
        }

        public let recordID: ID
        public let action: Action

        public init(recordID: ID, action: Action) {
            self.recordID = recordID
            self.action = action
        }

        public init(record: Record, action: Action) {
            self.init(recordID: record.recordID, action: action)
        }
    }
}

/// A place on Earth, as CloudKit stores a `CLLocation`: latitude and
/// longitude, and what a fix also says (accuracy, altitude, speed, course,
/// when), each kept when given.
public struct Location: Sendable, Hashable {
    public let latitude: Double
    public let longitude: Double
    /// Metres; nil: not given.
    public var horizontalAccuracy: Double?
    public var verticalAccuracy: Double?
    /// Metres above sea level.
    public var altitude: Double?
    /// Metres a second.
    public var speed: Double?
    /// Degrees from true north.
    public var course: Double?
    /// When the fix was taken (kept to the millisecond).
    public var timestamp: Date?

    public init(
        latitude: Double, longitude: Double, horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil,
        altitude: Double? = nil, speed: Double? = nil, course: Double? = nil, timestamp: Date? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.timestamp = timestamp
    }
}

/// A file on a record (CKAsset). Make one from a local file to save it;
/// a fetched record's asset has `fileURL` pointing at a local copy.
public struct Asset: Sendable, Hashable {
    /// The local file: the one to upload, or where a fetched asset was downloaded.
    public let fileURL: URL?
    public let size: Int?
    public let contentType: String?
    /// The bytes' SHA-256, in hex: the same bytes are the same asset.
    public let sha256: String?
    /// Where the server serves the bytes (signed, expires); nil for a new asset.
    public let downloadURL: URL?
    let uploadToken: String?

    /// An asset to save, from a file (its content type guessed from the extension unless given).
    public init(fileURL: URL, contentType: String? = nil) {
        self.fileURL = fileURL
        self.size = nil
        self.contentType = contentType
        self.sha256 = nil
        self.downloadURL = nil
        self.uploadToken = nil
    }

    init(fileURL: URL?, size: Int?, contentType: String?, sha256: String?, downloadURL: URL?, uploadToken: String?) {
        self.fileURL = fileURL
        self.size = size
        self.contentType = contentType
        self.sha256 = sha256
        self.downloadURL = downloadURL
        self.uploadToken = uploadToken
    }
}
