import CanopyPlanner

/// `changes/database` and `changes/zone`, over Canopy's `databaseChanges`
/// and `zoneChanges`: the sync tokens are Canopy's change tokens, opaque
/// and tamper-evident, and expire as they do (`CHANGE_TOKEN_EXPIRED`,
/// Canopy's own code: start again without one).
enum ChangesEndpoints {
    /// One page of the database's zone feed: the zones changed, then those
    /// deleted, as one JSON list of the reference's zone dictionaries the
    /// plan wrote in SQL (``DatabaseChangesPlan/cloudKitPage(_:secret:)``).
    static func databaseChanges(_ call: WebServicesCall, syncToken: String?) async throws -> (zones: String, syncToken: String, moreComing: Bool) {
        if call.database == "public" {
            throw APIError(.badDatabase, "the public database has one zone, _defaultZone: follow it with changes/zone")
        }
        guard let userID = call.userID else { throw QueryError(.notAuthenticated, "sign in first") }
        let limit = min(try call.body.integer("resultsLimit") ?? RecordsEndpoints.maximumResults, RecordsEndpoints.maximumResults)
        let secret = try await call.runner.changeTokenKey()
        let plan = try DatabaseChangesPlan(scope: call.databaseScope, since: syncToken, limit: Int(clamping: limit), userID: userID, secret: secret)
        let page = try await call.runner.read(plan.statement, from: .replica(after: plan.requiredPosition)) { rows in
            try rows.first.map(DatabaseChangesPlan.Page.decode)
        }
        guard let page else { throw APIError(.internalError, "changes/database returned no row") }
        return try plan.cloudKitPage(page, secret: secret)
    }

    static func database(_ call: WebServicesCall) async throws -> WebServicesBody {
        let feed = try await databaseChanges(call, syncToken: try call.body.string("syncToken"))
        return WebServicesBody(text: "{\"zones\":" + feed.zones + ",\"syncToken\":" + JSONValue.string(feed.syncToken).jsonText
                               + ",\"moreComing\":\(feed.moreComing)}")
    }

    /// Each zone asked for, on its own: one zone's failure (not found, an
    /// expired token) is that zone's error, beside the others' changes.
    static func zone(_ call: WebServicesCall) async throws -> WebServicesBody {
        guard case .array(let requested)? = call.body["zones"], !requested.isEmpty else {
            throw QueryError(.badRequest, "changes/zone needs zones, a list of {\"zoneID\": …, \"syncToken\": …}")
        }
        var text = "{\"zones\":["
        for (index, item) in requested.enumerated() {
            if index > 0 { text += "," }
            guard case .object(let request) = item else { throw QueryError(.badRequest, "zones[\(index)] must be a dictionary with a zoneID") }
            let zone = try call.zone(request["zoneID"], at: "zones[\(index)].zoneID")
            var recordTypes: Set<String>?
            if case .array(let types)? = request["desiredRecordTypes"] ?? call.body["desiredRecordTypes"] {
                recordTypes = Set(types.compactMap(\.stringValue))
            }
            let limit: Int64?
            switch request["resultsLimit"] {
            case .int(let number)?: limit = number
            default: limit = try call.body.integer("resultsLimit")
            }
            do {
                let feed = try await RecordsEndpoints.zoneChanges(
                    call, zone: zone, syncToken: try call.body.string("syncToken", in: request), limit: limit,
                    keys: try call.body.desiredKeys(request["desiredKeys"] ?? call.body["desiredKeys"]), recordTypes: recordTypes
                )
                text += "{\"zoneID\":"
                zone.dictionary.appendJSON(to: &text)
                text += ",\"syncToken\":"
                feed.syncToken.appendJSON(to: &text)
                text += ",\"moreComing\":"
                feed.moreComing.appendJSON(to: &text)
                text += ",\"records\":" + feed.records + "}"
            } catch let error as QueryError where error.code == .badRequest {
                throw error
            } catch {
                call.itemError("zoneID", zone.dictionary, error: error).appendJSON(to: &text)
            }
        }
        text += "]}"
        return WebServicesBody(text: text)
    }
}
