import Foundation
import PostgresNIO

/// Which share an operation is about: a zone (as a `ZoneReference`) and,
/// for a record-rooted share, its root's recordName. Its statement locates
/// it as the caller sees it: (zone id or NULL, share id or NULL); an
/// unknown root is UNKNOWN_ITEM (SQLSTATE CN006, from `canopy.find_share`).
public struct ShareTarget: Sendable {
    public let zone: ZoneReference
    public let rootRecordName: String?

    init(zone: ZoneReference, in arguments: Arguments) throws {
        self.zone = zone
        self.rootRecordName = try arguments.string("rootRecordName")
        if let root = rootRecordName, !Names.isRecordName(root) {
            throw arguments.invalid("rootRecordName", "rootRecordName must be 1-255 characters")
        }
    }

    /// A share named by another door (Web Services' share records): the
    /// zone's, or (with `rootRecordName`) a record hierarchy's.
    public init(zone: ZoneReference, rootRecordName: String?) throws(QueryError) {
        if let root = rootRecordName, !Names.isRecordName(root) {
            throw QueryError(.invalidArguments, "a share's root record name must be 1-255 characters")
        }
        self.zone = zone
        self.rootRecordName = rootRecordName
    }

    /// One row: (zone id, its owner's id, share id), each NULL when not
    /// found. The owner names the shard the change and its read-back go to
    /// on Citus (DECISIONS 170).
    public var locate: SQLStatement {
        var builder = SQLBuilder()
        let cte = zone.cte(&builder)
        let root = builder.bind(rootRecordName)
        builder.append("""
            WITH \(cte) SELECT (SELECT id FROM zone), (SELECT owner_id FROM zone), \
            (SELECT canopy.find_share(zone.id, \(root)::text, zone.owner_id) FROM zone)
            """)
        return builder.query
    }

    /// `locate`'s row.
    public static func decodeLocated(_ row: PostgresRow) throws -> LocatedShare? {
        let (zone, owner, share) = try row.decode((Int64?, Int64?, Int64?).self)
        guard let zone, let owner else { return nil }
        return LocatedShare(zoneID: zone, ownerID: owner, shareID: share)
    }

    /// What to call the share in a message.
    public var description: String {
        rootRecordName.map { "the record \($0)" } ?? "the zone \(zone.zoneName)"
    }
}

/// Where `ShareTarget.locate` found a share: its zone, the zone's owner
/// (every statement after names it), and the share, if there is one.
public struct LocatedShare: Sendable, Equatable {
    public let zoneID: Int64
    public let ownerID: Int64
    public let shareID: Int64?
}

/// A participant to add or change (`ParticipantInput`): exactly one of
/// userRecordName, email or phone; READ_ONLY or READ_WRITE; PRIVATE_USER
/// or ADMINISTRATOR.
public struct ParticipantInput: Sendable, Equatable {
    public var userRecordName: String?
    public var email: String?
    public var phone: String?
    public var permission: String
    public var role: String

    init(_ value: JSONValue?, argument name: String, in arguments: Arguments) throws {
        guard case .object(let object)? = value else {
            throw arguments.invalid(name, "\(name) must be {userRecordName | email | phone, permission, role}")
        }
        func text(_ key: String) throws -> String? {
            switch object[key] {
            case nil, .null?: return nil
            case .string(let text)?: return text
            case let other?: throw arguments.invalid(name, "\(key) must be a string, not \(other.typeName)")
            }
        }
        let (user, email, phone) = (try text("userRecordName"), try text("email"), try text("phone"))
        let (permission, role) = (try text("permission") ?? "", try text("role"))
        do {
            try self.init(userRecordName: user, email: email, phone: phone, permission: permission, role: role)
        } catch {
            throw QueryError(error.code, error.message, locations: arguments.location(name))
        }
    }

    /// A participant named by another door (a Web Services share record's
    /// `participants`), checked as the `ParticipantInput` argument is.
    public init(userRecordName: String?, email: String?, phone: String?, permission: String, role: String?) throws(QueryError) {
        func invalid(_ message: String) -> QueryError { QueryError(.invalidArguments, message) }
        self.userRecordName = userRecordName?.trimmingCharacters(in: .whitespaces)
        self.email = email?.trimmingCharacters(in: .whitespaces).lowercased()
        self.phone = phone?.trimmingCharacters(in: .whitespaces)
        let given = [self.userRecordName, self.email, self.phone].compactMap { $0 }
        guard given.count == 1, !given[0].isEmpty else {
            throw invalid("a participant is named by exactly one of userRecordName, email or phone")
        }
        if let email = self.email, email.split(separator: "@", omittingEmptySubsequences: false).count != 2 || email.hasPrefix("@") || email.hasSuffix("@") {
            throw invalid("email '\(email.prefix(100))' is not an email address")
        }
        self.permission = permission.trimmingCharacters(in: .whitespaces)
        guard self.permission == "READ_ONLY" || self.permission == "READ_WRITE" else {
            throw invalid("a participant's permission is READ_ONLY or READ_WRITE")
        }
        self.role = role?.trimmingCharacters(in: .whitespaces) ?? "PRIVATE_USER"
        guard self.role == "PRIVATE_USER" || self.role == "ADMINISTRATOR" else {
            throw invalid("a participant's role is PRIVATE_USER or ADMINISTRATOR (the owner is one already; public users join by URL)")
        }
    }

    var json: JSONValue {
        var object: [String: JSONValue] = ["permission": .string(permission), "role": .string(role)]
        if let userRecordName { object["userRecordName"] = .string(userRecordName) }
        if let email { object["email"] = .string(email) }
        if let phone { object["phone"] = .string(phone) }
        return .object(object)
    }
}

/// What `saveShare` says of a share beyond its title and participants
/// (docs/API.md §17): whether it allows access requests, and the display fields
/// CloudKit's invitations show, `cloudkit.share.type` and
/// `cloudkit.share.thumbnailImageData`. An absent argument keeps the value;
/// an explicit null clears a display field.
public struct ShareDisplayInput: Sendable, Equatable {
    public var allowsAccessRequests: Bool?
    public var setsType: Bool
    public var type: String?
    public var setsThumbnail: Bool
    /// Base64, checked to decode to at most ``maximumThumbnailBytes``.
    public var thumbnailBase64: String?

    /// The largest thumbnail a share keeps (the column's CHECK says so too).
    public static let maximumThumbnailBytes = 262_144

    /// Nothing said: every display field kept as it is.
    public init() {
        allowsAccessRequests = nil
        setsType = false
        type = nil
        setsThumbnail = false
        thumbnailBase64 = nil
    }

    init(_ arguments: Arguments) throws {
        switch try arguments.value("allowsAccessRequests") {
        case nil, .null?: allowsAccessRequests = nil
        case .bool(let allows)?: allowsAccessRequests = allows
        case let other?: throw arguments.invalid("allowsAccessRequests", "allowsAccessRequests is true or false, not \(other.typeName)")
        }
        setsType = try arguments.value("type") != nil
        type = try arguments.string("type")
        if let type, type.isEmpty || type.unicodeScalars.count > 255 {
            throw arguments.invalid("type", "a share's type is 1-255 characters (a UTI such as com.example.list)")
        }
        setsThumbnail = try arguments.value("thumbnailImageData") != nil
        thumbnailBase64 = try arguments.string("thumbnailImageData")
        if let thumbnailBase64 {
            guard let bytes = Data(base64Encoded: thumbnailBase64) else {
                throw arguments.invalid("thumbnailImageData", "thumbnailImageData is base64 (RFC 4648, with padding)")
            }
            guard bytes.count <= Self.maximumThumbnailBytes else {
                throw QueryError(.limitExceeded, "a share's thumbnail is at most \(Self.maximumThumbnailBytes) bytes, got \(bytes.count)",
                                 locations: arguments.location("thumbnailImageData"))
            }
        }
    }
}
