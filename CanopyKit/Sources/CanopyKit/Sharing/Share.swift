import Foundation

/// A share (CKShare): a zone's records or one record's hierarchy, opened to
/// invited participants and, with a public permission, to anyone holding
/// its URL. Make one for a zone or a root record, set its title, public
/// permission and participants, and save it with `Database.save(_:)`.
/// A struct (CKShare is a record subclass): change a `var` copy and save it.
public struct Share: Sendable, Hashable {
    /// What a participant may do (CKShare.ParticipantPermission).
    public enum Permission: String, Sendable, Hashable {
        case none = "NONE"
        case readOnly = "READ_ONLY"
        case readWrite = "READ_WRITE"
    }

    /// A participant's standing (CKShare.ParticipantRole).
    public enum ParticipantRole: String, Sendable, Hashable {
        case owner = "OWNER"
        case administrator = "ADMINISTRATOR"
        case privateUser = "PRIVATE_USER"
        case publicUser = "PUBLIC_USER"
    }

    /// Whether a participant has accepted (CKShare.ParticipantAcceptanceStatus).
    public enum AcceptanceStatus: String, Sendable, Hashable {
        case pending = "PENDING"
        case accepted = "ACCEPTED"
        case removed = "REMOVED"
    }

    /// A person on a share (CKShare.Participant): a user, or an invitation
    /// to an email address or phone number that becomes one on acceptance.
    public struct Participant: Sendable, Hashable {
        public var userRecordName: String?
        public var name: String?
        public var email: String?
        public var phone: String?
        public var role: ParticipantRole
        public var permission: Permission
        public internal(set) var acceptanceStatus: AcceptanceStatus
        /// Added by approving their access request (CKShare.Participant.isApprovedRequester).
        public internal(set) var isApprovedRequester = false
        /// When they were added (CKShare.Participant.dateAddedToShare); nil until saved.
        public internal(set) var dateAddedToShare: Date?

        /// An invitation by email, phone or user, with what they may do.
        public init(email: String? = nil, phone: String? = nil, userRecordName: String? = nil,
                    permission: Permission, role: ParticipantRole = .privateUser) {
            self.email = email
            self.phone = phone
            self.userRecordName = userRecordName
            self.permission = permission
            self.role = role
            self.name = nil
            self.acceptanceStatus = .pending
        }

        init(json: JSON) {
            let user = json["user"]
            userRecordName = user?["userRecordName"]?.string
            name = user?["name"]?.string
            email = json["email"]?.string ?? user?["email"]?.string
            phone = json["phone"]?.string ?? user?["phone"]?.string
            role = ParticipantRole(rawValue: json["role"]?.string ?? "") ?? .privateUser
            permission = Permission(rawValue: json["permission"]?.string ?? "") ?? .none
            acceptanceStatus = AcceptanceStatus(rawValue: json["status"]?.string ?? "") ?? .pending
            isApprovedRequester = json["isApprovedRequester"]?.bool ?? false
            dateAddedToShare = json["dateAddedToShare"]?.double.map { Date(timeIntervalSince1970: $0 / 1000) }
        }

        func samePerson(as other: Participant) -> Bool {
            if let a = userRecordName, let b = other.userRecordName { return a == b }
            if let a = email?.lowercased(), let b = other.email?.lowercased() { return a == b }
            if let a = phone, let b = other.phone { return a == b }
            return false
        }
    }

    /// The zone the share lives in; for a zone-wide share, the zone it opens.
    public let recordZoneID: RecordZone.ID
    /// The root record of a record-rooted share; nil for a zone-wide one.
    public let rootRecordID: Record.ID?
    public var title: String?
    public var publicPermission: Permission
    /// The URL to send people (nil until saved).
    public internal(set) var url: URL?
    public internal(set) var owner: Participant?
    public private(set) var participants: [Participant]
    var removedParticipants: [Participant] = []
    /// Whether people who are not participants may ask for access from the
    /// URL (CKShare.allowsAccessRequests, iOS 26); false by default.
    public var allowsAccessRequests = false
    /// Pending and blocked requesters, for the owner and administrators
    /// (CKShare.requesters and blockedIdentities, as one list).
    public internal(set) var accessRequests: [AccessRequest] = []
    /// cloudkit.share.type: what kind of thing is shared (a UTI).
    public var type: String?
    /// cloudkit.share.thumbnailImageData: a small image (at most 256 KiB).
    public var thumbnailImageData: Data?

    /// A person asking for access (CKShare.AccessRequester), or blocked from asking.
    public struct AccessRequest: Sendable, Hashable {
        public enum Status: String, Sendable, Hashable {
            case pending = "PENDING"
            case blocked = "BLOCKED"
        }
        /// Who, with their verified email or phone.
        public let user: UserIdentity?
        public let status: Status
        public let requestedAt: Date

        init(json: JSON) {
            user = json["user"].flatMap(UserIdentity.init(json:))
            status = Status(rawValue: json["status"]?.string ?? "") ?? .pending
            requestedAt = Date(timeIntervalSince1970: (json["requestedAt"]?.double ?? 0) / 1000)
        }
    }

    /// One entry of a share's activity log (Canopy's addition, docs/API.md §17).
    public struct Activity: Sendable, Hashable {
        /// What happened: SHARE_CREATED, INVITED, ACCEPTED, REQUEST_MADE, … (docs/SHARING.md).
        public let event: String
        /// Who did it (userRecordName); nil: the server.
        public let actor: String?
        /// Who it is about: a userRecordName, or an invitation's email or phone.
        public let subject: String?
        /// What changed (role, permission, from, to), as JSON text.
        public let detail: String
        public let date: Date

        init(json: JSON) {
            event = json["event"]?.string ?? ""
            actor = json["actor"]?.string
            subject = json["subject"]?.string
            detail = json["detail"].map { $0.text } ?? "{}"
            date = Date(timeIntervalSince1970: (json["at"]?.double ?? 0) / 1000)
        }
    }

    /// A zone-wide share (CKShare(recordZoneID:)): every record of the zone, now and later.
    public init(recordZoneID: RecordZone.ID) {
        self.recordZoneID = recordZoneID
        self.rootRecordID = nil
        self.publicPermission = .none
        self.participants = []
    }

    /// A share of a record and every record whose parent chain reaches it (CKShare(rootRecord:)).
    public init(rootRecord: Record) {
        self.recordZoneID = rootRecord.recordID.zoneID
        self.rootRecordID = rootRecord.recordID
        self.publicPermission = .none
        self.participants = []
    }

    init(json: JSON, scopeOwner: String?) throws {
        guard let zone = json["zone"], let zoneName = zone["zoneName"]?.string, let ownerName = zone["ownerName"]?.string else {
            throw CanopyError(.serverResponseLost, "a share without its zone")
        }
        let zoneID = RecordZone.ID(zoneName: zoneName, ownerName: scopeOwner ?? ownerName)
        recordZoneID = zoneID
        rootRecordID = json["rootRecordName"]?.string.map { Record.ID(recordName: $0, zoneID: zoneID) }
        title = json["title"]?.string
        publicPermission = Permission(rawValue: json["publicPermission"]?.string ?? "") ?? .none
        url = json["url"]?.string.flatMap(URL.init(string:))
        owner = json["owner"].map(Participant.init(json:))
        participants = (json["participants"]?.array ?? []).map(Participant.init(json:))
        allowsAccessRequests = json["allowsAccessRequests"]?.bool ?? false
        accessRequests = (json["accessRequests"]?.array ?? []).map(AccessRequest.init(json:))
        type = json["type"]?.string
        thumbnailImageData = json["thumbnailImageData"]?.string.flatMap { Data(base64Encoded: $0) }
    }

    /// Adds or changes a participant (CKShare.addParticipant); takes effect on save.
    public mutating func addParticipant(_ participant: Participant) {
        if let index = participants.firstIndex(where: { $0.samePerson(as: participant) }) {
            participants[index].permission = participant.permission
            participants[index].role = participant.role
        } else {
            participants.append(participant)
        }
        removedParticipants.removeAll { $0.samePerson(as: participant) }
    }

    /// Removes a participant (CKShare.removeParticipant); takes effect on save.
    public mutating func removeParticipant(_ participant: Participant) {
        participants.removeAll { $0.samePerson(as: participant) }
        removedParticipants.append(participant)
    }

    /// The signed-in user's own entry, when the share lists it (CKShare.currentUserParticipant).
    public func participant(userRecordName: String) -> Participant? {
        participants.first { $0.userRecordName == userRecordName }
    }

    /// What `Container.shareMetadata(for:)` answers (CKShare.Metadata): what
    /// a link opens, whose it is, and the caller's own standing in it.
    public struct Metadata: Sendable, Hashable {
        public let url: URL
        public let title: String?
        public let ownerName: String
        /// The owner's display name (CKShare.Metadata.ownerIdentity's name).
        public let ownerDisplayName: String?
        /// The zone as the recipient addresses it in the shared database.
        public let zoneID: RecordZone.ID
        public let rootRecordID: Record.ID?
        public let participantRole: ParticipantRole?
        public let participantPermission: Permission
        public let participantStatus: AcceptanceStatus?
        /// Whether the caller, not a participant, may ask for access (iOS 26).
        public let allowsAccessRequests: Bool
        /// The caller's own request: "PENDING", or nil.
        public let accessRequestStatus: String?
        /// cloudkit.share.type.
        public let type: String?
        /// cloudkit.share.thumbnailImageData.
        public let thumbnailImageData: Data?
        /// The root record, limited to the keys asked for, when fetched with
        /// `shouldFetchRootRecord` (CKShare.Metadata.rootRecord).
        public var rootRecord: Record? { rootRecordBox?.record }
        let rootRecordBox: RecordBox?

        init(json: JSON) throws {
            guard let url = json["url"]?.string.flatMap(URL.init(string:)), let owner = json["ownerName"]?.string,
                  let zoneName = json["zone"]?["zoneName"]?.string else {
                throw CanopyError(.serverResponseLost, "share metadata without its URL, owner or zone")
            }
            self.url = url
            self.title = json["title"]?.string
            self.ownerName = owner
            self.ownerDisplayName = json["ownerDisplayName"]?.string
            self.zoneID = RecordZone.ID(zoneName: zoneName, ownerName: owner)
            self.rootRecordID = json["rootRecordName"]?.string.map { Record.ID(recordName: $0, zoneID: RecordZone.ID(zoneName: zoneName, ownerName: owner)) }
            self.participantRole = json["role"]?.string.flatMap(ParticipantRole.init(rawValue:))
            self.participantPermission = Permission(rawValue: json["permission"]?.string ?? "") ?? .none
            self.participantStatus = json["status"]?.string.flatMap(AcceptanceStatus.init(rawValue:))
            self.allowsAccessRequests = json["allowsAccessRequests"]?.bool ?? false
            self.accessRequestStatus = json["accessRequestStatus"]?.string
            self.type = json["type"]?.string
            self.thumbnailImageData = json["thumbnailImageData"]?.string.flatMap { Data(base64Encoded: $0) }
            if let root = json["rootRecord"], !root.isNull {
                self.rootRecordBox = RecordBox(record: try Record(json: root, zoneID: RecordZone.ID(zoneName: zoneName, ownerName: owner)))
            } else {
                self.rootRecordBox = nil
            }
        }
    }

    /// Holds a metadata's root record so `Metadata` stays Hashable: two
    /// metadata are equal whatever root record they carry.
    final class RecordBox: Sendable, Hashable {
        let record: Record
        init(record: Record) { self.record = record }
        static func == (lhs: RecordBox, rhs: RecordBox) -> Bool { true }
        func hash(into hasher: inout Hasher) {}
    }
}
