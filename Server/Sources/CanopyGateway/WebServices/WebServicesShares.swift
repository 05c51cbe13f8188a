import CanopyPlanner
import CanopyWebServices

/// Shares as the reference shows them: records of type `cloudkit.share`,
/// saved and deleted through `records/modify`, read with `records/lookup`,
/// found by their `shortGUID` with `records/resolve` and accepted with
/// `records/accept`, over Canopy's `saveShare`, `removeParticipant`,
/// `deleteShare`, `share`, `shareMetadata` and `acceptShare`.
///
/// A share's record name: `cloudkit.zoneshare` for a zone's (CloudKit's
/// own name for it), `cloudkit.share.<root record name>` for a record
/// hierarchy's. Its `shortGUID` is the token of its URL (`/share/<token>`).
enum WebServicesShares {
    static let recordType = "cloudkit.share"
    static let zoneShareName = "cloudkit.zoneshare"
    static let hierarchyPrefix = "cloudkit.share."

    /// Whether an operation is on a share record. The reference writes the
    /// type `cloudKit.share` in places, CloudKit itself `cloudkit.share`:
    /// either is a share (answered as CloudKit spells it).
    static func isShare(recordType: String?, recordName: String) -> Bool {
        recordType?.lowercased() == Self.recordType || recordName == zoneShareName || recordName.hasPrefix(hierarchyPrefix)
    }

    /// The share's record name for a root (nil: the zone's share).
    static func recordName(root: String?) -> String {
        root.map { hierarchyPrefix + $0 } ?? zoneShareName
    }

    /// The root a share record's name stands for (nil: the zone's share).
    static func root(ofShareRecord name: String) -> String? {
        name.hasPrefix(hierarchyPrefix) ? String(name.dropFirst(hierarchyPrefix.count)) : nil
    }

    /// How the plans write a share record: the reference's dictionary, in
    /// the zone the request names, with its URL under the public URL.
    static func rendering(_ call: WebServicesCall, zone: WebServicesCall.Zone) -> ShareRendering {
        .cloudKit(zoneID: zone.dictionary, shareURLPrefix: shareURLPrefix(call))
    }

    static func shareURLPrefix(_ call: WebServicesCall) -> String {
        (call.publicURL.hasSuffix("/") ? String(call.publicURL.dropLast()) : call.publicURL) + "/share/"
    }

    /// One share operation of records/modify: the share record (JSON text,
    /// as the plan wrote it), or the item's error.
    static func modify(_ call: WebServicesCall, operation: JSONValue, zone: WebServicesCall.Zone) async -> String {
        guard case .object(let dictionary) = operation, case .string(let type)? = dictionary["operationType"],
              case .object(let record)? = dictionary["record"] else {
            return call.itemError("recordName", .null, code: .badRequest, reason: "a share operation needs operationType and record").jsonText
        }
        var name = record["recordName"]?.stringValue
        var root: String?
        if case .object(let forRecord)? = record["forRecord"], case .string(let rootName)? = forRecord["recordName"] {
            root = rootName
        } else if let name {
            root = Self.root(ofShareRecord: name)
        }
        if name == nil || (type == "create" && record["recordName"] == nil) { name = Self.recordName(root: root) }
        let shareName = JSONValue.string(name ?? Self.recordName(root: root))
        do {
            guard call.database == "private" || call.database == "shared" else {
                throw APIError(.badDatabase, "shares are made and changed by their owner in the private database, or by an administrator in the shared database")
            }
            guard call.userID != nil else {
                throw APIError(.notAuthenticated, "sign in first: a share is changed by its owner")
            }
            // The zone the request names, as saveShare's zoneName and
            // ownerName do: the caller's own, or the named owner's (whose
            // share only its owner and administrators may change: RLS).
            let target = try ShareTarget(zone: try ZoneReference(sharingZoneName: zone.zoneName, ownerName: zone.ownerName), rootRecordName: root)
            let rendering = rendering(call, zone: zone)
            if type == "delete" || type == "forceDelete" {
                let plan = ShareMutationPlan(target: target, action: .delete, rendering: rendering)
                _ = try await call.runner.mutateShares([plan])
                return JSONValue.object(["recordName": shareName, "deleted": .bool(true), "zoneID": zone.dictionary]).jsonText
            }
            guard type == "create" || WebServicesShares.savingTypes.contains(type) else {
                throw QueryError(.badRequest, "a share record's operationType is create, update, forceUpdate, replace, forceReplace, delete or forceDelete, not \(type.prefix(40))")
            }
            var participants: [ParticipantInput] = []
            var removals: [ShareMutationPlan.Action] = []
            if case .array(let given)? = record["participants"] {
                for (index, participant) in given.enumerated() {
                    switch try participantChange(participant, at: index) {
                    case .add(let input): participants.append(input)
                    case .remove(let removal): removals.append(removal)
                    }
                }
            } else if let given = record["participants"], !given.isNull {
                throw QueryError(.badRequest, "participants must be a list of share participant dictionaries, not \(given.typeName)")
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
            let save = ShareMutationPlan(
                target: target,
                action: .save(setsTitle: setsTitle, title: title, publicPermission: permission, participants: participants, display: ShareDisplayInput()),
                rendering: rendering
            )
            let plans = [save] + removals.map { ShareMutationPlan(target: target, action: $0, rendering: rendering) }
            // The save and every removal in one transaction: all or none.
            guard let share = try await call.runner.mutateShares(plans) else {
                throw APIError(.internalError, "the share was saved but not read back; quote request id \(call.requestID) when reporting it")
            }
            return share
        } catch {
            return call.itemError("recordName", shareName, error: error).jsonText
        }
    }

    /// The operation types that save a share record.
    static let savingTypes: Set<String> = ["update", "forceUpdate", "replace", "forceReplace"]

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
    static func participantChange(_ participant: JSONValue, at index: Int) throws -> ParticipantChange {
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

    /// The token of a share URL (its shortGUID).
    static func shortGUID(ofURL url: String) -> String? {
        guard let range = url.range(of: "/share/") else { return nil }
        return String(url[range.upperBound...])
    }

    /// records/lookup of a share record by its name: the share record as
    /// the plan wrote it, or the item's error.
    static func lookup(_ call: WebServicesCall, name: String, zone: WebServicesCall.Zone) async -> String {
        do {
            let target = try ShareTarget(zone: try zone.reference, rootRecordName: root(ofShareRecord: name))
            let plan = try SharePlan(target: target, rendering: rendering(call, zone: zone))
            let row = try await call.runner.read(plan.statement) { rows in try rows.first.map(SharePlan.decode) }
            guard let share = try plan.answer(row) else {
                return call.itemError("recordName", .string(name), code: .notFound, reason: "there is no share \(name) in this zone").jsonText
            }
            return share
        } catch {
            return call.itemError("recordName", .string(name), error: error).jsonText
        }
    }

    /// `records/resolve`: what a share URL's short GUID leads to.
    static func resolve(_ call: WebServicesCall) async throws -> WebServicesBody {
        try await results(call) { plan, _ in
            try plan.answer(try await call.runner.read(plan.statement) { rows in try rows.first.map(ShareMetadataPlan.decode) })
        }
    }

    /// `records/accept`: the caller joins each share.
    static func accept(_ call: WebServicesCall) async throws -> WebServicesBody {
        try await results(call) { plan, userID in
            try await ShareLinkOperation.accept.run(plan, database: call.runner.database, userID: userID, device: call.runner.device, logger: call.logger)
        }
    }

    /// Each `shortGUIDs` item's Share Metadata Dictionary as `run` answers
    /// it for its plan, or the item's error.
    static func results(
        _ call: WebServicesCall, _ run: (ShareMetadataPlan, Int64) async throws -> String?
    ) async throws -> WebServicesBody {
        guard let userID = call.userID else { throw APIError(.notAuthenticated, "sign in first: a share is opened by a person") }
        guard case .array(let guids)? = call.body["shortGUIDs"], !guids.isEmpty else {
            throw QueryError(.badRequest, "give shortGUIDs, a list of {\"value\": …}: the token at the end of a share's URL")
        }
        let style = CloudKitShareMetadataStyle(container: call.container, environment: call.environment, shareURLPrefix: shareURLPrefix(call))
        var results: [String] = []
        for (index, item) in guids.enumerated() {
            guard case .object(let guid) = item, case .string(let value)? = guid["value"], !value.isEmpty else {
                throw QueryError(.badRequest, "shortGUIDs[\(index)] needs a value")
            }
            let token = shortGUID(ofURL: value) ?? value
            // shouldFetchRootRecord (default false) and rootRecordDesiredKeys.
            var rootRecord: CloudKitShareMetadataStyle.RootRecord?
            switch guid["shouldFetchRootRecord"] {
            case nil, .null?, .bool(false)?: break
            case .bool(true)?:
                let names: [String]?
                do {
                    names = try WebServicesRequestBody.desiredKeys(guid["rootRecordDesiredKeys"])
                } catch {
                    throw QueryError(.badRequest, "shortGUIDs[\(index)].rootRecordDesiredKeys: \(error.message)")
                }
                rootRecord = .init(desiredKeys: names, numbersAsStrings: call.numbersAsStrings)
            case let other?:
                throw QueryError(.badRequest, "shortGUIDs[\(index)].shouldFetchRootRecord must be true or false, not \(other.typeName)")
            }
            do {
                let plan = try ShareMetadataPlan(url: token, cloudKit: style, rootRecord: rootRecord)
                results.append(try await run(plan, userID) ?? "null")
            } catch {
                results.append(call.itemError("shortGUID", .string(token), error: error).jsonText)
            }
        }
        return WebServicesBody(text: "{\"results\":[" + results.joined(separator: ",") + "]}")
    }
}
