import CanopyPlanner
import CanopyWebServices
import Foundation

/// `records/query`, `records/lookup`, `records/modify` and `records/changes`,
/// each one GraphQL field of Canopy's (`records`, `lookup`, `modifyRecords`,
/// `zoneChanges`) under a reference envelope.
enum RecordsEndpoints {
    /// The most records one query answers: the reference's maximum. A
    /// larger `resultsLimit` is answered 200 at a time, with a
    /// `continuationMarker` for the rest, as the reference pages.
    static let maximumResults: Int64 = 200

    /// `records/query`: the request becomes a ``RecordsQuery`` (its filters a
    /// predicate tree) and the plan writes CloudKit's record dictionaries;
    /// the answer is PostgreSQL's text with the envelope around it.
    static func query(_ call: WebServicesCall) async throws -> WebServicesBody {
        let zone = try call.zone(call.body["zoneID"])
        // zoneWide: every zone of the database at once; ignored with a
        // zoneID, as the reference says.
        let zoneWide: Bool
        switch call.body["zoneWide"] {
        case nil, .null?, .bool(false)?: zoneWide = false
        case .bool(true)?: zoneWide = call.body["zoneID"] == nil || call.body["zoneID"]?.isNull == true
        case let other?: throw QueryError(.badRequest, "zoneWide must be true or false, not \(other.typeName)")
        }
        let query = try WebServicesQuery(call.body["query"])
        let asked = try call.body.integer("resultsLimit") ?? maximumResults
        guard asked >= 1 else {
            throw QueryError(.badRequest, "resultsLimit must be at least 1, not \(asked)")
        }
        let limit = min(asked, maximumResults)
        let records = RecordsQuery(
            zone: zoneWide ? ZoneReference.everyZone(of: call.databaseScope) : try zone.reference, recordType: query.recordType, predicate: query.predicate, sort: query.sort,
            limit: Int(limit), cursor: try call.body.string("continuationMarker"),
            // The filter's text and values name the query in its cursors
            // (describing the tree instead was 6% of W10's gateway CPU);
            // its text alone (values as placeholders) names its plan.
            filterText: (query.filter ?? "") + "\u{1F}" + JSONValue.object(query.args).jsonText, filterShape: query.filter ?? ""
        )
        var style = try call.recordStyle(zone: zone)
        style.zoneIDFromZone = zoneWide
        let secret = try await call.runner.cursorKey()
        let (checked, version) = try await call.recordSchemas.planning(query.recordType, logger: call.logger) { schema, version in
            (try RecordsPlan.check(records, style: style, schema: schema, secret: secret), version)
        }
        let plan: RecordsPlan, row: RecordsPlan.Row?
        if let shape = checked.shape {
            // Planned once per shape, as GraphQL's records (issue 69, P2).
            let key = PlanCache.Key(document: 0, field: "records/query", variables: "", shape: shape, schemaVersion: version)
            (plan, row) = try await call.runner.rowCached(
                key, operation: .webServicesQuery, recordType: query.recordType,
                replay: { try RecordsPlan(checked, secret: secret, template: $0) },
                recording: { try RecordsPlan(checked, secret: secret, recording: true) },
                cold: { try RecordsPlan(checked, secret: secret) }
            )
        } else {
            plan = try RecordsPlan(checked, secret: secret)
            row = try await call.runner.row(plan)
        }
        let page = try plan.page(row)
        var text = "{\"records\":"
        text += page.records
        if let cursor = page.cursor {
            text += ",\"continuationMarker\":"
            JSONValue.string(cursor).appendJSON(to: &text)
        }
        text += "}"
        return WebServicesBody(text: text)
    }

    /// `records/lookup`: the records by name, as CloudKit's record
    /// dictionaries written by the plan; a share's name (`cloudkit.share…`)
    /// is looked up as a share.
    static func lookup(_ call: WebServicesCall) async throws -> WebServicesBody {
        let zone = try call.zone(call.body["zoneID"])
        guard case .array(let items)? = call.body["records"], !items.isEmpty else {
            throw QueryError(.badRequest, "records/lookup needs records, a list of {\"recordName\": …}")
        }
        var names: [String] = []
        var shares: [Int: String] = [:]
        var ownKeys = KeysGroups()
        for (index, item) in items.enumerated() {
            guard case .object(let record) = item, case .string(let name)? = record["recordName"] else {
                throw QueryError(.badRequest, "records[\(index)] needs a recordName")
            }
            if WebServicesShareRecord.isShare(recordType: nil, recordName: name) {
                shares[index] = await WebServicesShares.lookup(call, name: name, zone: zone)
            } else {
                names.append(name)
                // A record's own desiredKeys replace the request's.
                if let keys = record["desiredKeys"] {
                    do {
                        ownKeys.add(name, keys: try WebServicesRequestBody.desiredKeys(keys))
                    } catch {
                        throw QueryError(.badRequest, "records[\(index)].desiredKeys: \(error.message)")
                    }
                }
            }
        }
        if names.isEmpty {
            return WebServicesBody(text: "{\"records\":[" + items.indices.compactMap { shares[$0] }.joined(separator: ",") + "]}")
        }
        var style = try call.recordStyle(zone: zone)
        style.desiredKeysByRecord = ownKeys.groups
        let records = try await lookupRecords(call, zone: try zone.reference, names: names, style: style)
        guard !shares.isEmpty else { return WebServicesBody(text: "{\"records\":" + records + "}") }
        // Shares looked up among records: put them back in the order asked.
        guard case .array(var found) = try JSONValue(parsing: records) else { return WebServicesBody(text: "{\"records\":" + records + "}") }
        found.reverse()
        let ordered: [String] = items.indices.map { index in shares[index] ?? (found.popLast() ?? .null).jsonText }
        return WebServicesBody(text: "{\"records\":[" + ordered.joined(separator: ",") + "]}")
    }

    /// The records of `names` as the plan writes them (JSON text), its
    /// statement from the plan cache when one of its shape was made before
    /// (``LookupPlan/CloudKitLookup/shape``), as GraphQL's `lookup`'s is.
    static func lookupRecords(_ call: WebServicesCall, zone: ZoneReference, names: [String], style: CloudKitRecordStyle) async throws -> String {
        let lookup = try LookupPlan.check(zone: zone, names: names, style: style)
        guard let shape = lookup.shape else {
            let plan = LookupPlan(lookup)
            return try plan.answer(try await call.runner.row(plan)) ?? "[]"
        }
        let key = PlanCache.Key(document: 0, field: "records/lookup", variables: "", shape: shape, schemaVersion: 0)
        return try await call.runner.runCached(
            key, operation: .webServicesLookup, recordType: nil,
            replay: { try LookupPlan(lookup, template: $0) },
            recording: { LookupPlan(lookup, recording: true) },
            cold: { LookupPlan(lookup) }
        ) ?? "[]"
    }

    /// Records (or operations) with `desiredKeys` of their own, grouped by
    /// their keys in the order first seen, for ``CloudKitRecordStyle``.
    struct KeysGroups {
        private(set) var groups: [CloudKitRecordStyle.DesiredKeysGroup] = []

        mutating func add(_ name: String, keys list: [String]?) {
            if let index = groups.firstIndex(where: { $0.keys == list }) {
                groups[index].names.append(name)
            } else {
                groups.append(.init(names: [name], keys: list))
            }
        }
    }

    /// One zone's changes since `syncToken`, as changes/zone and
    /// records/changes answer them: `(records, syncToken, moreComing)`,
    /// the records written by the plan.
    static func zoneChanges(
        _ call: WebServicesCall, zone: WebServicesCall.Zone, syncToken: String?, limit: Int64?, keys: [String]?,
        recordTypes: Set<String>?
    ) async throws -> (records: String, syncToken: JSONValue, moreComing: JSONValue) {
        var style = try call.recordStyle(zone: zone)
        style.desiredKeys = keys
        let secret = try await call.runner.changeTokenKey()
        let plan = try ZoneChangesPlan(
            zone: try zone.reference, since: syncToken, limit: Int(clamping: min(limit ?? maximumResults, maximumResults)),
            userID: call.userID ?? ChangeToken.anonymousUser, secret: secret, style: style, recordTypes: recordTypes.map { $0.sorted() }
        )
        let page = try await call.runner.read(plan.statement, from: .replica(after: plan.requiredPosition)) { rows in
            try rows.first.map(ZoneChangesPlan.Page.decode)
        }
        guard let page, page.zoneID != nil else { throw QueryError(.zoneNotFound, "the zone does not exist") }
        let answer = try plan.cloudKitPage(page, secret: secret)
        return (answer.records, .string(answer.syncToken), .bool(answer.moreComing))
    }

    /// `records/changes`: the reference's older one-zone feed.
    static func changes(_ call: WebServicesCall) async throws -> WebServicesBody {
        let zone = try call.zone(call.body["zoneID"])
        let limit = try call.body.integer("resultsLimit")
        let feed = try await zoneChanges(call, zone: zone, syncToken: try call.body.string("syncToken"), limit: limit,
                                         keys: try call.body.desiredKeys(), recordTypes: nil)
        var text = "{\"records\":" + feed.records + ",\"syncToken\":"
        feed.syncToken.appendJSON(to: &text)
        text += ",\"moreComing\":"
        feed.moreComing.appendJSON(to: &text)
        text += ",\"reverse\":false}"
        return WebServicesBody(text: text)
    }
}
