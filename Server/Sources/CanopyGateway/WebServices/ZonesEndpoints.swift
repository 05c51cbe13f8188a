import CanopyPlanner
import CanopyWebServices

/// `zones/list`, `zones/lookup`, `zones/modify` and `zones/changes`, over
/// Canopy's zone plans. The zone ID dictionaries are written by the plans
/// in SQL; the gateway adds only the sync tokens, which it seals with its
/// own key (``ZoneSyncTokensPlan``). The public database has one zone,
/// `_defaultZone`, which it lists; it has no custom zones to make.
enum ZonesEndpoints {
    /// The zones of the database, each with its zone ID dictionary (JSON
    /// text) and sync token.
    static func zones(_ call: WebServicesCall) async throws -> [ZoneSyncTokensPlan.Zone] {
        let plan = ZoneSyncTokensPlan(scope: call.databaseScope, userID: call.userID ?? ChangeToken.anonymousUser)
        let secret = try await call.runner.changeTokenKey()
        let rows = try await call.runner.read(plan.statement) { rows in try rows.map(ZoneSyncTokensPlan.decode) }
        return plan.zones(rows, secret: secret)
    }

    static func list(_ call: WebServicesCall) async throws -> WebServicesBody {
        let zones = try await zones(call).map { WebServicesWriter.zone(zoneIDText: $0.zoneID, syncToken: $0.syncToken) }
        return WebServicesBody(text: "{\"zones\":[" + zones.joined(separator: ",") + "]}")
    }

    /// Each zone asked for, in order: its dictionary, or ZONE_NOT_FOUND in
    /// its place. A zone ID without `ownerRecordName` names the first zone
    /// of that name the caller reaches (its own, in the private database).
    static func lookup(_ call: WebServicesCall) async throws -> WebServicesBody {
        guard case .array(let requested)? = call.body["zones"], !requested.isEmpty else {
            throw QueryError(.badRequest, "zones/lookup needs zones, a list of zone ID dictionaries ({\"zoneName\": …})")
        }
        // Read every zone ID first: a malformed one refuses the request.
        let asked = try requested.enumerated().map { index, item throws(QueryError) in
            // The reference's zones/lookup lists zone IDs; some clients wrap them in {"zoneID": …}.
            var zoneID = item
            if case .object(let wrapper) = item, let inner = wrapper["zoneID"] { zoneID = inner }
            return try call.zone(zoneID, at: "zones[\(index)]")
        }
        let known = try await zones(call)
        let answers: [String] = asked.map { zone in
            let found = known.first { $0.name == zone.zoneName && (zone.ownerName == nil || $0.ownerName == zone.ownerName) }
            if let found { return WebServicesWriter.zone(zoneIDText: found.zoneID, syncToken: found.syncToken) }
            return call.itemError("zoneID", zone.dictionary, code: .zoneNotFound,
                                  reason: "zone \(zone.zoneName) does not exist or is not shared with you").jsonText
        }
        return WebServicesBody(text: "{\"zones\":[" + answers.joined(separator: ",") + "]}")
    }

    /// Each operation on its own, in order, as the reference says.
    static func modify(_ call: WebServicesCall) async throws -> WebServicesBody {
        guard case .array(let items)? = call.body["operations"], !items.isEmpty else {
            throw QueryError(.badRequest, "zones/modify needs operations, a list of {\"operationType\": \"create\" | \"delete\", \"zone\": {\"zoneID\": …}}")
        }
        let operations = try items.enumerated().map { index, item throws(QueryError) in
            try WebServicesZoneOperation(item, at: "operations[\(index)]", scope: call.databaseScope)
        }
        var out: [String] = []
        for operation in operations {
            let zone = operation.zone
            do {
                if call.database == "public" {
                    throw APIError(.badDatabase, "the public database has one zone, _defaultZone, and no custom zones")
                }
                switch operation.action {
                case .create:
                    guard call.database == "private" else {
                        throw APIError(.badDatabase, "zones are created in the private database")
                    }
                    let statement = try SaveZonePlan.statement(zoneName: zone.zoneName)
                    let saved = try await call.runner.write(statement) { rows in try rows.first.map { try $0.decode((String, String).self) } }
                    guard let (zoneName, owner) = saved else { throw QueryError(.notAuthenticated, "the token's user no longer exists") }
                    let made = WebServicesZoneID(zoneName: zoneName, ownerName: owner, scope: call.databaseScope)
                    out.append(WebServicesWriter.zone(zoneIDText: made.dictionary.jsonText, syncToken: nil))
                case .delete:
                    let plan = try DeleteZonePlan(zone: try zone.reference)
                    let count = try await call.runner.write(plan.statement) { rows in try rows.first.map { try $0.decode(Int.self) } ?? 0 }
                    guard count > 0 else { throw QueryError(.zoneNotFound, "the zone does not exist") }
                    out.append(JSONValue.object(["zoneID": zone.dictionary, "deleted": .bool(true)]).jsonText)
                }
            } catch {
                out.append(call.itemError("zoneID", zone.dictionary, error: error).jsonText)
            }
        }
        return WebServicesBody(text: "{\"zones\":[" + out.joined(separator: ",") + "]}")
    }

    /// `zones/changes`: the zones changed since `metaSyncToken` (the
    /// database feed's token, as `changes/database` gives it).
    static func changes(_ call: WebServicesCall) async throws -> WebServicesBody {
        let feed = try await ChangesEndpoints.databaseChanges(call, syncToken: try call.body.string("metaSyncToken"))
        return WebServicesBody(text: "{\"zones\":" + feed.zones + ",\"metaSyncToken\":" + JSONValue.string(feed.syncToken).jsonText
                               + ",\"moreComing\":\(feed.moreComing)}")
    }
}
