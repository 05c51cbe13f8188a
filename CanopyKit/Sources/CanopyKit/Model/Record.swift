import Foundation

/// A record (CKRecord): typed fields subscripted by key, plus the system
/// fields the server keeps. A class, as CKRecord is, so a record fetched,
/// changed and saved is one object; it locks its own state, so it may
/// cross tasks.
public final class Record: @unchecked Sendable, CustomStringConvertible {
    public let recordID: ID
    public let recordType: String

    private let lock = NSLock()
    private var values: [String: FieldValue]
    private var changed: Set<String> = []
    private var _parent: Reference?
    private var _recordChangeTag: String?
    private var _creationDate: Date?
    private var _modificationDate: Date?
    private var _creatorUserRecordName: String?
    private var _lastModifiedUserRecordName: String?
    private var _shareURL: URL?

    /// A new record of `recordType` in a zone (the default zone unless given).
    public init(recordType: String, recordID: ID = ID()) {
        self.recordType = recordType
        self.recordID = recordID
        self.values = [:]
    }

    /// A new record of `recordType` with a generated name in `zoneID`.
    public convenience init(recordType: String, zoneID: RecordZone.ID) {
        self.init(recordType: recordType, recordID: ID(zoneID: zoneID))
    }

    init(recordType: String, recordID: ID, values: [String: FieldValue], parent: Reference?, recordChangeTag: String?,
         creationDate: Date?, modificationDate: Date?, creator: String?, lastModifier: String?, shareURL: URL?) {
        self.recordType = recordType
        self.recordID = recordID
        self.values = values
        self._parent = parent
        self._recordChangeTag = recordChangeTag
        self._creationDate = creationDate
        self._modificationDate = modificationDate
        self._creatorUserRecordName = creator
        self._lastModifiedUserRecordName = lastModifier
        self._shareURL = shareURL
    }

    /// A field's value (`record["endDate"] = Date()`; `record["endDate"] as? Date`).
    /// Integers read back as `Int`. Assigning nil removes the field.
    public subscript(key: String) -> (any RecordValue)? {
        get { lock.withLock { values[key]?.recordValue } }
        set {
            lock.withLock {
                values[key] = newValue?.fieldValue
                changed.insert(key)
            }
        }
    }

    /// A field's value with its Canopy type.
    public func fieldValue(forKey key: String) -> FieldValue? {
        lock.withLock { values[key] }
    }

    /// The keys that hold a value (CKRecord.allKeys()).
    public func allKeys() -> [String] {
        lock.withLock { values.keys.sorted() }
    }

    /// The keys set since the record was made or fetched (CKRecord.changedKeys()).
    public func changedKeys() -> [String] {
        lock.withLock { changed.sorted() }
    }

    /// The record's parent, which decides which share it belongs to (CKRecord.parent).
    public var parent: Reference? {
        get { lock.withLock { _parent } }
        set { lock.withLock { _parent = newValue } }
    }

    /// Make `parentRecord` this record's parent (CKRecord.setParent(_:)).
    public func setParent(_ parentRecord: Record?) {
        parent = parentRecord.map { Reference(record: $0, action: .none) }
    }

    /// Changes on every save; nil for a record never saved (CKRecord.recordChangeTag).
    public var recordChangeTag: String? { lock.withLock { _recordChangeTag } }
    public var creationDate: Date? { lock.withLock { _creationDate } }
    public var modificationDate: Date? { lock.withLock { _modificationDate } }
    /// The `userRecordName` of who created it (CKRecord.creatorUserRecordID).
    public var creatorUserRecordName: String? { lock.withLock { _creatorUserRecordName } }
    /// The `userRecordName` of who saved it last (CKRecord.lastModifiedUserRecordID).
    public var lastModifiedUserRecordName: String? { lock.withLock { _lastModifiedUserRecordName } }
    /// Set on the root record of a record-rooted share: the share's URL.
    public var shareURL: URL? { lock.withLock { _shareURL } }

    /// All fields with their types.
    public var fieldValues: [String: FieldValue] { lock.withLock { values } }

    /// A copy, for an app that keeps its own version apart from what it sends.
    public func copy() -> Record {
        lock.withLock {
            Record(recordType: recordType, recordID: recordID, values: values, parent: _parent, recordChangeTag: _recordChangeTag,
                   creationDate: _creationDate, modificationDate: _modificationDate, creator: _creatorUserRecordName,
                   lastModifier: _lastModifiedUserRecordName, shareURL: _shareURL)
        }
    }

    /// Takes the server's system fields (tag, dates) after a save; the
    /// fields stay the app's, except that an uploaded asset becomes the
    /// stored one (its token is used up), keeping the local file.
    func adoptSystemFields(of saved: Record) {
        let (tag, created, modified, creator, modifier, share) = (saved.recordChangeTag, saved.creationDate, saved.modificationDate,
                                                                   saved.creatorUserRecordName, saved.lastModifiedUserRecordName, saved.shareURL)
        let server = saved.fieldValues
        lock.withLock {
            for (key, value) in values {
                if let stored = server[key] { values[key] = Self.storedAssets(value, stored) }
            }
            _recordChangeTag = tag
            _creationDate = created
            _modificationDate = modified
            _creatorUserRecordName = creator
            _lastModifiedUserRecordName = modifier
            _shareURL = share
            changed.removeAll()
        }
    }

    private static func storedAssets(_ local: FieldValue, _ stored: FieldValue) -> FieldValue {
        switch (local, stored) {
        case (.asset(let mine), .asset(let theirs)) where mine.uploadToken != nil:
            return .asset(Asset(fileURL: mine.fileURL, size: theirs.size, contentType: theirs.contentType, sha256: theirs.sha256,
                                downloadURL: theirs.downloadURL, uploadToken: nil))
        case (.list(let mine), .list(let theirs)) where mine.count == theirs.count:
            return .list(zip(mine, theirs).map { storedAssets($0, $1) })
        default:
            return local
        }
    }

    /// Replaces an asset the app attached from a file with the uploaded one.
    func replaceValues(_ newValues: [String: FieldValue]) {
        lock.withLock { values = newValues }
    }

    /// Sets the change tag a save must carry (used to save "mine over theirs" after a conflict).
    public func setRecordChangeTag(_ tag: String?) {
        lock.withLock { _recordChangeTag = tag }
    }

    public var description: String {
        let values = fieldValues
        let fields = values.keys.sorted().map { "\($0)=\(values[$0]!)" }.joined(separator: ", ")
        return "\(recordType) \(recordID.recordName) [\(fields)]"
    }
}
