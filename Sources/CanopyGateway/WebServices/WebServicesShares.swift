import CanopyPlanner

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

    /// Whether an operation is on a share record.
    static func isShare(recordType: String?, recordName: String) -> Bool {
        recordType == Self.recordType || recordName == zoneShareName || recordName.hasPrefix(hierarchyPrefix)
    }

    /// The share's record name for a root (nil: the zone's share).
    static func recordName(root: String?) -> String {
        root.map { hierarchyPrefix + $0 } ?? zoneShareName
    }

    /// The root a share record's name stands for (nil: the zone's share).
    static func root(ofShareRecord name: String) -> String? {
        name.hasPrefix(hierarchyPrefix) ? String(name.dropFirst(hierarchyPrefix.count)) : nil
    }

    static let shareSelection = """
        url title publicPermission rootRecordName zone { zoneName ownerName } \
        owner { user { userRecordName name email phone } email phone role permission status } \
        participants { user { userRecordName name email phone } email phone role permission status }
        """

    static let saveDocument = """
        mutation WebServicesSaveShare($zone: String!, $root: String, $permission: Permission, $participants: [ParticipantInput!]) \
        { saveShare(zoneName: $zone, rootRecordName: $root, publicPermission: $permission, participants: $participants) { \(shareSelection) } }
        """
    static let saveTitledDocument = """
        mutation WebServicesSaveTitledShare($zone: String!, $root: String, $title: String, $permission: Permission, $participants: [ParticipantInput!]) \
        { saveShare(zoneName: $zone, rootRecordName: $root, title: $title, publicPermission: $permission, participants: $participants) { \(shareSelection) } }
        """
    static let removeDocument = """
        mutation WebServicesRemoveParticipant($zone: String!, $root: String, $user: String, $email: String) \
        { removeParticipant(zoneName: $zone, rootRecordName: $root, userRecordName: $user, email: $email) { \(shareSelection) } }
        """
    static let deleteDocument = "mutation WebServicesDeleteShare($zone: String!, $root: String) { deleteShare(zoneName: $zone, rootRecordName: $root) }"
    static let lookupDocument = """
        query WebServicesShare($scope: DatabaseScope!, $zone: ZoneID!, $root: String) { share(scope: $scope, zone: $zone, rootRecordName: $root) { \(shareSelection) } }
        """

    /// One share operation of records/modify: the share record, or the item's error.
    static func modify(_ call: WebServicesCall, operation: JSONValue, zone: WebServicesCall.Zone) async -> JSONValue {
        guard case .object(let dictionary) = operation, case .string(let type)? = dictionary["operationType"],
              case .object(let record)? = dictionary["record"] else {
            return call.itemError("recordName", .null, code: .badRequest, reason: "a share operation needs operationType and record")
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
            guard call.database == "private" else {
                throw APIError(.badDatabase, "shares are made and changed by their owner, in the private database")
            }
            guard case .object(let zoneInput) = zone.input, let zoneName = zoneInput["zoneName"] else {
                throw APIError(.badRequest, "a share needs its zone")
            }
            if type == "delete" || type == "forceDelete" {
                _ = try await call.bridge.run(deleteDocument, ["zone": zoneName, "root": root.map(JSONValue.string) ?? .null])
                return .object(["recordName": shareName, "deleted": .bool(true), "zoneID": zone.dictionary])
            }
            var participants: [JSONValue] = []
            var removals: [(user: String?, email: String?)] = []
            if case .array(let given)? = record["participants"] {
                for participant in given {
                    let (input, removed) = try participantInput(participant)
                    if let removed { removals.append(removed) } else if let input { participants.append(input) }
                }
            }
            var variables: [String: JSONValue] = [
                "zone": zoneName, "root": root.map(JSONValue.string) ?? .null, "participants": .array(participants),
                "permission": record["publicPermission"].flatMap { $0.isNull ? nil : $0 } ?? .null,
            ]
            var document = saveDocument
            if case .object(let fields)? = record["fields"], case .object(let title)? = fields["cloudkit.title"] {
                variables["title"] = title["value"] ?? .null
                document = saveTitledDocument
            }
            var share = try await call.bridge.run(document, variables)
            for removal in removals {
                share = try await call.bridge.run(removeDocument, [
                    "zone": zoneName, "root": root.map(JSONValue.string) ?? .null,
                    "user": removal.user.map(JSONValue.string) ?? .null, "email": removal.email.map(JSONValue.string) ?? .null,
                ])
            }
            return Self.dictionary(share, zoneID: zone.dictionary, callerRecordName: nil)
        } catch {
            return call.itemError("recordName", shareName, error: error)
        }
    }

    /// A reference participant (`{type, permission, acceptanceStatus,
    /// userIdentity: {lookupInfo: {emailAddress | phoneNumber | userRecordName}}}`)
    /// as Canopy's `ParticipantInput`, or, with `acceptanceStatus: REMOVED`,
    /// as a removal.
    static func participantInput(_ participant: JSONValue) throws -> (JSONValue?, (user: String?, email: String?)?) {
        guard case .object(let given) = participant else { throw APIError(.badRequest, "a participant is a dictionary") }
        var lookup: [String: JSONValue] = [:]
        if case .object(let identity)? = given["userIdentity"] {
            if case .object(let info)? = identity["lookupInfo"] { lookup = info }
            if lookup["userRecordName"] == nil, let name = identity["userRecordName"] { lookup["userRecordName"] = name }
        }
        let email = lookup["emailAddress"]?.stringValue, phone = lookup["phoneNumber"]?.stringValue
        let user = lookup["userRecordName"]?.stringValue
        guard email != nil || phone != nil || user != nil else {
            throw APIError(.badRequest, "a participant needs userIdentity.lookupInfo with emailAddress, phoneNumber or userRecordName")
        }
        if given["acceptanceStatus"]?.stringValue == "REMOVED" { return (nil, (user, email)) }
        let permission = given["permission"]?.stringValue ?? "READ_ONLY"
        guard ["READ_ONLY", "READ_WRITE"].contains(permission) else {
            throw APIError(.badRequest, "a participant's permission is READ_ONLY or READ_WRITE, not \(permission.prefix(20))")
        }
        var input: [String: JSONValue] = [
            "permission": .string(permission), "role": .string(given["type"]?.stringValue == "ADMINISTRATOR" ? "ADMINISTRATOR" : "PRIVATE_USER"),
        ]
        if let email { input["email"] = .string(email) }
        if let phone { input["phone"] = .string(phone) }
        if let user { input["userRecordName"] = .string(user) }
        return (.object(input), nil)
    }

    /// The token of a share URL (its shortGUID).
    static func shortGUID(ofURL url: String) -> String? {
        guard let range = url.range(of: "/share/") else { return nil }
        return String(url[range.upperBound...])
    }

    /// A Canopy participant as the reference's share participant dictionary.
    static func participant(_ value: JSONValue) -> JSONValue {
        guard case .object(let participant) = value else { return value }
        var user: [String: JSONValue] = [:]
        if case .object(let found)? = participant["user"] { user = found }
        let (first, last) = UsersEndpoints.names(user["name"])
        let type: String = switch participant["role"]?.stringValue {
        case "OWNER": "OWNER"
        case "ADMINISTRATOR": "ADMINISTRATOR"
        case "PUBLIC_USER": "PUBLIC_USER"
        default: "USER"
        }
        let status: String = switch participant["status"]?.stringValue {
        case "PENDING": "INVITED"
        case "ACCEPTED": "ACCEPTED"
        case "REMOVED": "REMOVED"
        default: "UNKNOWN"
        }
        return .object([
            "type": .string(type), "permission": participant["permission"] ?? .string("UNKNOWN"), "acceptanceStatus": .string(status),
            "userIdentity": .object([
                "userRecordName": user["userRecordName"] ?? .null,
                "lookupInfo": .object([
                    "emailAddress": user["email"] ?? participant["email"] ?? .null,
                    "phoneNumber": user["phone"] ?? participant["phone"] ?? .null,
                    "userRecordName": user["userRecordName"] ?? .null,
                ]),
                "nameComponents": .object(["givenName": first, "familyName": last]),
            ]),
        ])
    }

    /// A Canopy share as the reference's share record.
    static func dictionary(_ share: JSONValue, zoneID: JSONValue, callerRecordName: String?) -> JSONValue {
        guard case .object(let object) = share else { return share }
        let root = object["rootRecordName"]?.stringValue
        var record: [String: JSONValue] = [
            "recordName": .string(recordName(root: root)), "recordType": .string(recordType), "deleted": .bool(false), "zoneID": zoneID,
            "publicPermission": object["publicPermission"] ?? .string("NONE"),
            "owner": object["owner"].map(participant) ?? .null,
            "participants": .array((object["participants"].flatMap { if case .array(let items) = $0 { items } else { nil } } ?? []).map(participant)),
            "fields": .object(object["title"].flatMap { $0.isNull ? nil : $0 }.map { ["cloudkit.title": .object(["value": $0, "type": .string("STRING")])] } ?? [:]),
        ]
        if let url = object["url"]?.stringValue {
            record["shortGUID"] = shortGUID(ofURL: url).map(JSONValue.string) ?? .null
            record["url"] = .string(url)
        }
        if let root { record["share"] = .object(["recordName": .string(root), "zoneID": zoneID]) }
        return .object(record)
    }

    /// records/lookup of a share record by its name.
    static func lookup(_ call: WebServicesCall, name: String, zone: WebServicesCall.Zone) async -> JSONValue {
        do {
            let share = try await call.bridge.run(lookupDocument, [
                "scope": call.scope, "zone": zone.input, "root": root(ofShareRecord: name).map(JSONValue.string) ?? .null,
            ])
            if share.isNull { return call.itemError("recordName", .string(name), code: .notFound, reason: "there is no share \(name) in this zone") }
            return dictionary(share, zoneID: zone.dictionary, callerRecordName: nil)
        } catch {
            return call.itemError("recordName", .string(name), error: error)
        }
    }

    static let metadataSelection = "url title ownerName ownerDisplayName zone { zoneName ownerName } rootRecordName role permission status"
    static let metadataDocument = "query WebServicesResolve($url: String!) { shareMetadata(url: $url) { \(metadataSelection) } }"
    static let acceptDocument = "mutation WebServicesAccept($url: String!) { acceptShare(url: $url) { \(metadataSelection) } }"

    /// `records/resolve`: what a share URL's short GUID leads to.
    static func resolve(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        try await results(call, document: metadataDocument)
    }

    /// `records/accept`: the caller joins each share.
    static func accept(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        try await results(call, document: acceptDocument)
    }

    static func results(_ call: WebServicesCall, document: String) async throws -> [String: JSONValue] {
        guard case .array(let guids)? = call.body["shortGUIDs"], !guids.isEmpty else {
            throw QueryError(.badRequest, "give shortGUIDs, a list of {\"value\": …}: the token at the end of a share's URL")
        }
        var results: [JSONValue] = []
        for (index, item) in guids.enumerated() {
            guard case .object(let guid) = item, case .string(let value)? = guid["value"], !value.isEmpty else {
                throw QueryError(.badRequest, "shortGUIDs[\(index)] needs a value")
            }
            let token = shortGUID(ofURL: value) ?? value
            do {
                let metadata = try await call.bridge.run(document, ["url": .string("\(call.publicURL)/share/\(token)")])
                results.append(result(metadata, shortGUID: token, call: call))
            } catch {
                results.append(call.itemError("shortGUID", .string(token), error: error))
            }
        }
        return ["results": .array(results)]
    }

    static func result(_ metadata: JSONValue, shortGUID: String, call: WebServicesCall) -> JSONValue {
        guard case .object(let object) = metadata else { return metadata }
        var zone: [String: JSONValue] = [:]
        if case .object(let found)? = object["zone"] { zone = found }
        let owner = object["ownerName"]?.stringValue
        let zoneID = WebServicesCall.zoneID(zoneName: zone["zoneName"]?.stringValue ?? "_defaultZone", owner: owner, database: "shared")
        let (first, last) = UsersEndpoints.names(object["ownerDisplayName"])
        let type: JSONValue = switch object["role"]?.stringValue {
        case "OWNER"?: .string("OWNER")
        case "ADMINISTRATOR"?: .string("ADMINISTRATOR")
        case "PUBLIC_USER"?: .string("PUBLIC_USER")
        case "PRIVATE_USER"?: .string("USER")
        default: .null
        }
        let status: JSONValue = switch object["status"]?.stringValue {
        case "PENDING"?: .string("INVITED")
        case "ACCEPTED"?: .string("ACCEPTED")
        case "REMOVED"?: .string("REMOVED")
        default: .null
        }
        var result: [String: JSONValue] = [
            "containerIdentifier": .string(call.container), "environment": .string(call.environment),
            "databaseScope": .string(object["role"]?.stringValue == "OWNER" ? "PRIVATE" : "SHARED"),
            "shortGUID": .string(shortGUID), "zoneID": zoneID,
            "ownerIdentity": .object(["userRecordName": owner.map(JSONValue.string) ?? .null, "nameComponents": .object(["givenName": first, "familyName": last])]),
            "participantPermission": object["permission"] ?? .null, "participantStatus": status, "participantType": type,
            "webpageURL": object["url"] ?? .null,
        ]
        if let root = object["rootRecordName"]?.stringValue { result["rootRecordName"] = .string(root) }
        if let title = object["title"], !title.isNull {
            result["share"] = .object([
                "recordName": .string(recordName(root: object["rootRecordName"]?.stringValue)), "recordType": .string(recordType),
                "fields": .object(["cloudkit.title": .object(["value": title, "type": .string("STRING")])]),
                "shortGUID": .string(shortGUID), "zoneID": zoneID,
            ])
        }
        return .object(result)
    }
}
