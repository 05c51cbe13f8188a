import CanopyPlanner

/// A share as the reference shows it: a record of type `cloudkit.share`,
/// named `cloudkit.zoneshare` for a zone's share (CloudKit's own name) and
/// `cloudkit.share.<root record name>` for a record hierarchy's, found by
/// its `shortGUID` (the token of its URL, `/share/<token>`). One
/// `records/modify` operation on a share record is read here into the
/// sharing plan's change; the gateway runs it (`WebServicesShares`).
public struct WebServicesShareRecord: Sendable {
    public static let recordType = "cloudkit.share"
    public static let zoneShareName = "cloudkit.zoneshare"
    public static let hierarchyPrefix = "cloudkit.share."
    /// The operation types that save a share record.
    public static let savingTypes: Set<String> = ["update", "forceUpdate", "replace", "forceReplace"]

    /// Whether an operation is on a share record. The reference writes the
    /// type `cloudKit.share` in places, CloudKit itself `cloudkit.share`:
    /// either is a share (answered as CloudKit spells it).
    public static func isShare(recordType: String?, recordName: String) -> Bool {
        recordType?.lowercased() == Self.recordType || recordName == zoneShareName || recordName.hasPrefix(hierarchyPrefix)
    }

    /// The share's record name for a root (nil: the zone's share).
    public static func recordName(root: String?) -> String {
        root.map { hierarchyPrefix + $0 } ?? zoneShareName
    }

    /// The root a share record's name stands for (nil: the zone's share).
    public static func root(ofShareRecord name: String) -> String? {
        name.hasPrefix(hierarchyPrefix) ? String(name.dropFirst(hierarchyPrefix.count)) : nil
    }

    /// The token of a share URL (its shortGUID); nil when it is not one.
    public static func shortGUID(ofURL url: String) -> String? {
        guard let range = url.range(of: "/share/") else { return nil }
        return String(url[range.upperBound...])
    }

    /// What one operation does to the share.
    public enum Change: Sendable, Equatable {
        case delete
        /// The share saved (its title, public permission, and the
        /// participants added or changed), then the participants removed:
        /// all in one transaction.
        case save(ShareMutationPlan.Action, removals: [ShareMutationPlan.Action])
    }

    /// The share record's name (given, or made from its root).
    public var recordName: String
    /// The hierarchy's root record (`forRecord`, or the name's); nil: the zone's share.
    public var root: String?
    public var operationType: String
    let record: [String: JSONValue]

    /// A `records/modify` operation on a share record; nil when it has no
    /// `operationType` and `record` (that item's error).
    public init?(operation: JSONValue) {
        guard case .object(let dictionary) = operation, case .string(let type)? = dictionary["operationType"],
              case .object(let record)? = dictionary["record"] else { return nil }
        operationType = type
        self.record = record
        let given = record["recordName"]?.stringValue
        if case .object(let forRecord)? = record["forRecord"], case .string(let rootName)? = forRecord["recordName"] {
            root = rootName
        } else if let given {
            root = Self.root(ofShareRecord: given)
        }
        recordName = given ?? Self.recordName(root: root)
    }

    /// What the operation asks, read and checked: what is wrong is that
    /// operation's error, naming the member.
    public func change() throws(QueryError) -> Change {
        if operationType == "delete" || operationType == "forceDelete" { return .delete }
        guard operationType == "create" || Self.savingTypes.contains(operationType) else {
            throw QueryError(.badRequest, "a share record's operationType is create, update, forceUpdate, replace, forceReplace, delete or forceDelete, not \(operationType.prefix(40))")
        }
        var participants: [ParticipantInput] = []
        var removals: [ShareMutationPlan.Action] = []
        switch record["participants"] {
        case nil, .null?: break
        case .array(let given)?:
            for (index, participant) in given.enumerated() {
                switch try Self.participantChange(participant, at: index) {
                case .add(let input): participants.append(input)
                case .remove(let removal): removals.append(removal)
                }
            }
        case let other?: throw QueryError(.badRequest, "participants must be a list of share participant dictionaries, not \(other.typeName)")
        }
        var title: String?
        var setsTitle = false
        if case .object(let fields)? = record["fields"], case .object(let field)? = fields["cloudkit.title"] {
            setsTitle = true
            switch field["value"] {
            case nil, .null?: title = nil
            case .string(let text)?:
                guard text.unicodeScalars.count <= 1024 else { throw QueryError(.badRequest, "cloudkit.title is at most 1024 characters") }
                title = text
            case let other?: throw QueryError(.badRequest, "cloudkit.title's value must be a string, not \(other.typeName)")
            }
        }
        var permission: String?
        switch record["publicPermission"] {
        case nil, .null?: permission = nil
        case .string(let given)? where ["NONE", "READ_ONLY", "READ_WRITE"].contains(given): permission = given
        case let other?: throw QueryError(.badRequest, "publicPermission is NONE, READ_ONLY or READ_WRITE, not \(other.jsonText.prefix(40))")
        }
        let save = ShareMutationPlan.Action.save(setsTitle: setsTitle, title: title, publicPermission: permission, participants: participants,
                                                 display: ShareDisplayInput())
        return .save(save, removals: removals)
    }

    /// What a share record's participant asks: to be added or changed, or
    /// (`acceptanceStatus: REMOVED`) to be removed.
    enum ParticipantChange {
        case add(ParticipantInput)
        case remove(ShareMutationPlan.Action)
    }

    /// A reference participant (`{type, permission, acceptanceStatus,
    /// userIdentity: {lookupInfo: {emailAddress | phoneNumber | userRecordName}}}`)
    /// as the planner's ``ParticipantInput``, or, with `acceptanceStatus:
    /// REMOVED`, as a removal.
    static func participantChange(_ participant: JSONValue, at index: Int) throws(QueryError) -> ParticipantChange {
        guard case .object(let given) = participant else { throw QueryError(.badRequest, "participants[\(index)] is a dictionary") }
        var lookup: [String: JSONValue] = [:]
        if case .object(let identity)? = given["userIdentity"] {
            if case .object(let info)? = identity["lookupInfo"] { lookup = info }
            if lookup["userRecordName"] == nil, let name = identity["userRecordName"] { lookup["userRecordName"] = name }
        }
        let email = lookup["emailAddress"]?.stringValue, phone = lookup["phoneNumber"]?.stringValue
        let user = lookup["userRecordName"]?.stringValue
        guard email != nil || phone != nil || user != nil else {
            throw QueryError(.badRequest, "participants[\(index)] needs userIdentity.lookupInfo with emailAddress, phoneNumber or userRecordName")
        }
        // One name for the person: the record name where the reference
        // gives several (an identity it answered earlier), else the address.
        let named = (user: user, email: user == nil ? email : nil, phone: user == nil && email == nil ? phone : nil)
        if given["acceptanceStatus"]?.stringValue == "REMOVED" {
            return .remove(.removeParticipant(userRecordName: named.user, email: named.email?.lowercased(), phone: named.phone))
        }
        let permission = given["permission"]?.stringValue ?? "READ_ONLY"
        guard ["READ_ONLY", "READ_WRITE"].contains(permission) else {
            throw QueryError(.badRequest, "participants[\(index)]'s permission is READ_ONLY or READ_WRITE, not \(permission.prefix(20))")
        }
        do {
            return .add(try ParticipantInput(
                userRecordName: named.user, email: named.email, phone: named.phone, permission: permission,
                role: given["type"]?.stringValue == "ADMINISTRATOR" ? "ADMINISTRATOR" : "PRIVATE_USER"
            ))
        } catch {
            throw QueryError(.badRequest, "participants[\(index)]: \(error.message)")
        }
    }
}
