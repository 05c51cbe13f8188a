import CanopyPlanner

/// `zones/list`, `zones/lookup`, `zones/modify` and `zones/changes`, over
/// Canopy's `zones`, `saveZone`, `deleteZone` and `databaseChanges`. The
/// public database has one zone, `_defaultZone`, answered without asking
/// the database (Canopy's `zones` refuses PUBLIC as CloudKit's clients do).
enum ZonesEndpoints {
    /// The zones of the database, as the reference's zone dictionaries,
    /// each with its sync token (``ZoneSyncTokensPlan``).
    static func zones(_ call: WebServicesCall) async throws -> [JSONValue] {
        let scope: DatabaseScope = switch call.database {
        case "public": .public
        case "shared": .shared
        default: .private
        }
        let plan = ZoneSyncTokensPlan(scope: scope, userID: call.userID ?? ChangeToken.anonymousUser)
        let secret = try await call.runner.changeTokenKey()
        let rows = try await call.runner.read(plan.statement) { rows in try rows.map(ZoneSyncTokensPlan.decode) }
        return plan.zones(rows, secret: secret).map { zone in
            self.zone(zoneName: zone.name, owner: zone.ownerName, database: call.database, syncToken: zone.syncToken)
        }
    }

    static func zone(zoneName: String, owner: String?, database: String, syncToken: String? = nil) -> JSONValue {
        var zone: [String: JSONValue] = ["zoneID": WebServicesCall.zoneID(zoneName: zoneName, owner: owner, database: database), "atomic": .bool(true)]
        if let syncToken { zone["syncToken"] = .string(syncToken) }
        return .object(zone)
    }

    static func list(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        ["zones": .array(try await zones(call))]
    }

    static func lookup(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .array(let requested)? = call.body["zones"], !requested.isEmpty else {
            throw QueryError(.badRequest, "zones/lookup needs zones, a list of zone ID dictionaries ({\"zoneName\": …})")
        }
        let known = try await zones(call)
        var byName: [String: JSONValue] = [:]
        for case .object(let zone) in known {
            if case .object(let zoneID)? = zone["zoneID"], case .string(let name)? = zoneID["zoneName"] {
                let owner = zoneID["ownerRecordName"]?.stringValue ?? ""
                byName[name + "\u{0}" + owner] = .object(zone)
                if byName[name] == nil { byName[name] = .object(zone) }
            }
        }
        var out: [JSONValue] = []
        for (index, item) in requested.enumerated() {
            // The reference's zones/lookup lists zone IDs; some clients wrap them in {"zoneID": …}.
            var zoneID = item
            if case .object(let wrapper) = item, let inner = wrapper["zoneID"] { zoneID = inner }
            let zone = try call.zone(zoneID, at: "zones[\(index)]")
            guard case .object(let asked) = zone.dictionary, case .string(let name)? = asked["zoneName"] else { continue }
            let owner = asked["ownerRecordName"]?.stringValue
            if let found = owner.map({ byName[name + "\u{0}" + $0] }) ?? byName[name] {
                out.append(found)
            } else {
                out.append(call.itemError("zoneID", zone.dictionary, code: .zoneNotFound, reason: "zone \(name) does not exist or is not shared with you"))
            }
        }
        return ["zones": .array(out)]
    }

    /// Each operation on its own, in order, as the reference says.
    static func modify(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .array(let operations)? = call.body["operations"], !operations.isEmpty else {
            throw QueryError(.badRequest, "zones/modify needs operations, a list of {\"operationType\": \"create\" | \"delete\", \"zone\": {\"zoneID\": …}}")
        }
        var out: [JSONValue] = []
        for (index, item) in operations.enumerated() {
            guard case .object(let operation) = item, case .string(let type)? = operation["operationType"], type == "create" || type == "delete" else {
                throw QueryError(.badRequest, "operations[\(index)].operationType must be create or delete")
            }
            var zoneID: JSONValue? = nil
            if case .object(let zone)? = operation["zone"] { zoneID = zone["zoneID"] }
            guard zoneID != nil else { throw QueryError(.badRequest, "operations[\(index)] needs zone: {\"zoneID\": {\"zoneName\": …}}") }
            let zone = try call.zone(zoneID, at: "operations[\(index)].zone.zoneID")
            do {
                if call.database == "public" {
                    throw APIError(.badDatabase, "the public database has one zone, _defaultZone, and no custom zones")
                }
                if type == "create" {
                    guard call.database == "private" else {
                        throw APIError(.badDatabase, "zones are created in the private database")
                    }
                    let statement = try SaveZonePlan.statement(zoneName: zone.zoneName)
                    let saved = try await call.runner.write(statement) { rows in try rows.first.map { try $0.decode((String, String).self) } }
                    guard let (zoneName, owner) = saved else { throw QueryError(.notAuthenticated, "the token's user no longer exists") }
                    out.append(self.zone(zoneName: zoneName, owner: owner, database: call.database))
                } else {
                    let plan = try DeleteZonePlan(zone: try zone.reference)
                    let count = try await call.runner.write(plan.statement) { rows in try rows.first.map { try $0.decode(Int.self) } ?? 0 }
                    guard count > 0 else { throw QueryError(.zoneNotFound, "the zone does not exist") }
                    out.append(.object(["zoneID": zone.dictionary, "deleted": .bool(true)]))
                }
            } catch {
                out.append(call.itemError("zoneID", zone.dictionary, error: error))
            }
        }
        return ["zones": .array(out)]
    }

    /// `zones/changes`: the zones changed since `metaSyncToken` (Canopy's
    /// `databaseChanges`, whose token it is).
    static func changes(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        let feed = try await ChangesEndpoints.databaseChanges(call, syncToken: try call.string("metaSyncToken"))
        return ["zones": .array(feed.zones), "metaSyncToken": feed.syncToken, "moreComing": feed.moreComing]
    }
}
