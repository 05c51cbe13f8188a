import PostgresNIO

/// `share(scope, zone, rootRecordName)`: one statement returning whether
/// the zone exists for the caller and the `Share` JSON (NULL: not shared,
/// or not a share the caller may see).
public struct SharePlan: Sendable {
    public let statement: SQLStatement
    let locations: [QueryError.Location]

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let target = try ShareTarget(zone: ZoneReference(scope: DatabaseScope.read(arguments, publicRefusal: DatabaseScope.notInPublic("it has no shares")), in: arguments), in: arguments)
        locations = request.location(of: field.field)
        var builder = SQLBuilder()
        let cte = target.zone.cte(&builder)
        let root = builder.bind(target.rootRecordName), owner = target.zone.ownerValue(&builder)
        let share = try Projection.share(.graphQL(field.children, request), owner: owner, &builder) { s in
            Self.located(s, root: root, owner: owner)
        }
        builder.append("WITH \(cte) SELECT EXISTS (SELECT 1 FROM zone), \(share)::text")
        statement = builder.query
    }

    /// A share looked up by another door (Web Services' `records/lookup`
    /// of a share record's name), written as `rendering` says.
    public init(target: ShareTarget, rendering: ShareRendering) throws(QueryError) {
        if target.zone.scope == .public {
            throw QueryError(.badDatabase, DatabaseScope.notInPublic("it has no shares"))
        }
        locations = []
        var builder = SQLBuilder()
        let cte = target.zone.cte(&builder)
        let root = builder.bind(target.rootRecordName), owner = target.zone.ownerValue(&builder)
        let share: SQL
        do {
            share = try Projection.share(rendering, owner: owner, &builder) { s in Self.located(s, root: root, owner: owner) }
        } catch let error as QueryError {
            throw error
        } catch {
            throw QueryError(.badRequest, "\(error)")
        }
        builder.append("WITH \(cte) SELECT EXISTS (SELECT 1 FROM zone), \(share)::text")
        statement = builder.query
    }

    /// The share row `s` that `canopy.find_share` finds in the `zone` CTE's
    /// zone, given its owner where the request names one (on Citus, the
    /// owner's shard: DECISIONS 170).
    static func located(_ s: SQL, root: SQL, owner: SQL?) -> SQL {
        let condition: SQL = "\(s).id = (SELECT canopy.find_share(zone.id, \(root)::text, zone.owner_id) FROM zone)"
        return owner.map { "\(condition) AND \(s).owner_id = \($0)" } ?? condition
    }
}

/// The sharing mutations. Each runs in one transaction as the caller:
/// `target.locate` finds the zone and share, `change` does the work
/// through the `canopy.*` functions of migration 0006 (row-level security
/// decides who may), and `response` reads the `Share` back.
public struct ShareMutationPlan: Sendable {
    public enum Action: Sendable, Equatable {
        /// saveShare: title nil keeps it unless `setsTitle`; publicPermission nil keeps it.
        case save(setsTitle: Bool, title: String?, publicPermission: String?, participants: [ParticipantInput], display: ShareDisplayInput)
        case setParticipant(ParticipantInput)
        case removeParticipant(userRecordName: String?, email: String?, phone: String?)
        /// approveAccessRequest (APPROVE, with a permission), denyAccessRequest
        /// (DENY), blockAccessRequest (BLOCK), unblockRequester (UNBLOCK).
        case decideRequest(userRecordName: String, decision: String, permission: String?)
        case delete
        case leave
    }

    public let target: ShareTarget
    public let action: Action
    /// How `response` writes the share read back.
    let rendering: ShareRendering

    /// A sharing mutation named by another door (Web Services' share
    /// records), its share written as `rendering` says.
    public init(target: ShareTarget, action: Action, rendering: ShareRendering) {
        self.target = target
        self.action = action
        self.rendering = rendering
    }

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        rendering = .graphQL(field.children, request)
        switch field.name {
        case "saveShare":
            target = try ShareTarget(zone: ZoneReference(zoneNameIn: arguments, allowsOwnerName: false), in: arguments)
            let title = try arguments.string("title")
            if let title, title.unicodeScalars.count > 1024 {
                throw arguments.invalid("title", "a title is at most 1024 characters")
            }
            let publicPermission = try arguments.string("publicPermission")
            if let publicPermission, !["NONE", "READ_ONLY", "READ_WRITE"].contains(publicPermission) {
                throw arguments.invalid("publicPermission", "publicPermission is NONE, READ_ONLY or READ_WRITE")
            }
            var participants: [ParticipantInput] = []
            if case .array(let items)? = try arguments.value("participants") {
                participants = try items.map { try ParticipantInput($0, argument: "participants", in: arguments) }
            }
            action = .save(setsTitle: try arguments.value("title") != nil, title: title, publicPermission: publicPermission,
                           participants: participants, display: try ShareDisplayInput(arguments))
        case "setParticipant":
            target = try ShareTarget(zone: ZoneReference(zoneNameIn: arguments, allowsOwnerName: true), in: arguments)
            action = .setParticipant(try ParticipantInput(try arguments.value("participant"), argument: "participant", in: arguments))
        case "removeParticipant":
            target = try ShareTarget(zone: ZoneReference(zoneNameIn: arguments, allowsOwnerName: true), in: arguments)
            let userRecordName = try arguments.string("userRecordName")
            let email = try arguments.string("email")?.lowercased()
            let phone = try arguments.string("phone")
            guard [userRecordName, email, phone].compactMap({ $0 }).count == 1 else {
                throw arguments.invalid("userRecordName", "name the participant to remove by exactly one of userRecordName, email or phone")
            }
            action = .removeParticipant(userRecordName: userRecordName, email: email, phone: phone)
        case "approveAccessRequest", "denyAccessRequest", "blockAccessRequest", "unblockRequester":
            target = try ShareTarget(zone: ZoneReference(zoneNameIn: arguments, allowsOwnerName: true), in: arguments)
            let requester = try arguments.requiredString("userRecordName")
            var permission: String?
            if field.name == "approveAccessRequest" {
                permission = try arguments.string("permission") ?? "READ_ONLY"
                guard permission == "READ_ONLY" || permission == "READ_WRITE" else {
                    throw arguments.invalid("permission", "an approved requester's permission is READ_ONLY or READ_WRITE")
                }
            }
            let decisions = ["approveAccessRequest": "APPROVE", "denyAccessRequest": "DENY",
                             "blockAccessRequest": "BLOCK", "unblockRequester": "UNBLOCK"]
            action = .decideRequest(userRecordName: requester, decision: decisions[field.name] ?? "DENY", permission: permission)
        case "deleteShare":
            target = try ShareTarget(zone: ZoneReference(zoneNameIn: arguments, allowsOwnerName: false), in: arguments)
            action = .delete
        case "leaveShare":
            target = try ShareTarget(zone: ZoneReference(scope: .shared, in: arguments), in: arguments)
            action = .leave
        default:
            throw QueryError(.badRequest, "\(field.name) is not a sharing mutation")
        }
    }

    /// Whether the operation needs an existing share (else UNKNOWN_ITEM).
    public var needsShare: Bool {
        switch action {
        case .setParticipant, .removeParticipant, .decideRequest: return true
        case .save, .delete, .leave: return false
        }
    }

    /// The statement that makes the change; one row, one column: the share
    /// id (save), nothing useful (set, remove), rows deleted (delete) or
    /// shares left (leave). Each function is given the zone's owner, by
    /// which it reads and writes (DECISIONS 170).
    public func change(_ located: LocatedShare) -> SQLStatement {
        let (zoneID, shareID) = (located.zoneID, located.shareID)
        var builder = SQLBuilder()
        builder.noteOwner(id: located.ownerID)
        let owner = builder.bind(located.ownerID)
        switch action {
        case .save(let setsTitle, let title, let publicPermission, let participants, let display):
            let zone = builder.bind(zoneID), root = builder.bind(target.rootRecordName)
            let flag = builder.bind(setsTitle), text = builder.bind(title), permission = builder.bind(publicPermission)
            let list = builder.bind(json: .array(participants.map(\.json)))
            let requests = builder.bind(display.allowsAccessRequests)
            let setsType = builder.bind(display.setsType), type = builder.bind(display.type)
            let setsThumbnail = builder.bind(display.setsThumbnail), thumbnail = builder.bind(display.thumbnailBase64)
            builder.append("""
                SELECT canopy.save_share(\(zone), \(root)::text, \(flag), \(text)::text, \(permission)::text, \(list), \
                \(requests)::boolean, \(setsType), \(type)::text, \(setsThumbnail), decode(\(thumbnail)::text, 'base64'), \(owner))
                """)
        case .setParticipant(let participant):
            let share = builder.bind(shareID), user = builder.bind(participant.userRecordName)
            let email = builder.bind(participant.email), phone = builder.bind(participant.phone)
            let role = builder.bind(participant.role), permission = builder.bind(participant.permission)
            builder.append("SELECT 0::bigint FROM canopy.put_participant(\(share), \(user)::text, \(email)::text, \(phone)::text, \(role), \(permission), \(owner))")
        case .removeParticipant(let userRecordName, let email, let phone):
            let share = builder.bind(shareID), user = builder.bind(userRecordName), address = builder.bind(email)
            let number = builder.bind(phone)
            builder.append("SELECT 0::bigint FROM canopy.remove_participant(\(share), \(user)::text, \(address)::text, \(number)::text, \(owner))")
        case .decideRequest(let userRecordName, let decision, let permission):
            let share = builder.bind(shareID), user = builder.bind(userRecordName)
            let verdict = builder.bind(decision), granted = builder.bind(permission)
            builder.append("SELECT 0::bigint FROM canopy.decide_share_request(\(share), \(user), \(verdict), \(granted)::text, \(owner))")
        case .delete:
            let share = builder.bind(shareID)
            builder.append("SELECT canopy.delete_share(\(share), \(owner))::bigint")
        case .leave:
            let zone = builder.bind(zoneID), root = builder.bind(target.rootRecordName)
            builder.append("SELECT canopy.leave_shares(\(zone), \(root)::text, \(owner))::bigint")
        }
        return builder.query
    }

    /// The `Share` JSON of the share, as the caller now sees it.
    /// `change`'s row: the share saved, or how many rows were deleted or
    /// left (NULL for a participant change).
    public static func decodeChanged(_ row: PostgresRow) throws -> Int64? {
        try row.decode(Int64?.self)
    }

    public func response(shareID: Int64, ownerID: Int64) throws -> SQLStatement {
        var builder = SQLBuilder()
        let id = builder.bind(shareID), owner = builder.bind(ownerID)
        let share = try Projection.share(rendering, owner: owner, &builder) { s in "\(s).owner_id = \(owner) AND \(s).id = \(id)" }
        builder.append("SELECT \(share)::text")
        return builder.query
    }
}

extension SharePlan: FieldPlan {
    public func answer(_ row: ZoneJSONRow?) throws -> String? {
        guard let row, row.zoneFound else { throw QueryError.zoneNotFound(at: locations) }
        return row.json
    }
}
