import CanopyPlanner
import Foundation

/// `records/query`, `records/lookup`, `records/modify` and `records/changes`,
/// each one GraphQL field of Canopy's (`records`, `lookup`, `modifyRecords`,
/// `zoneChanges`) under a reference envelope.
enum RecordsEndpoints {
    static let queryDocument = """
        query WebServicesQuery($scope: DatabaseScope!, $zone: ZoneID!, $type: String!, $filter: String, $args: JSON, \
        $sort: [Sort!], $limit: Int, $cursor: String, $keys: [String!]) { records(scope: $scope, zone: $zone, \
        recordType: $type, filter: $filter, args: $args, sort: $sort, limit: $limit, cursor: $cursor) \
        { records { \(WebServicesRecord.selection) } cursor } }
        """

    /// The most records one query answers, as Canopy's `records` allows.
    static let maximumResults: Int64 = 400

    static func query(_ call: WebServicesCall) async throws -> WebServicesBody {
        let zone = try call.zone(call.body["zoneID"])
        if call.body["zoneWide"] == .bool(true), call.body["zoneID"] == nil || call.body["zoneID"]?.isNull == true {
            throw QueryError(.badRequest, "zoneWide queries (every zone at once) are not served by Canopy: query each zone (zones/list lists them)")
        }
        let query = try WebServicesQuery(call.body["query"])
        let limit = try call.integer("resultsLimit") ?? 200
        guard (1...maximumResults).contains(limit) else {
            throw QueryError(.badRequest, "resultsLimit must be 1-\(maximumResults), not \(limit)")
        }
        let variables: [String: JSONValue] = [
            "scope": call.scope, "zone": zone.input, "type": .string(query.recordType),
            "filter": query.filter.map(JSONValue.string) ?? .null, "args": .object(query.args),
            "sort": .array(query.sort), "limit": .int(limit),
            "cursor": try call.string("continuationMarker").map(JSONValue.string) ?? .null,
            "keys": try call.desiredKeys(),
        ]
        // The page is read as text: its records' bytes are copied, not parsed (W10).
        guard let answer = try await call.bridge.runText(queryDocument, variables) else { return WebServicesBody(["records": .array([])]) }
        let json = RawJSON(answer)
        let page = json.members(json.whole)
        let records = page.first { $0.key == "records" }.map { json.elements($0.value) } ?? []
        var text = "{\"records\":"
        try await WebServicesRecordText.append(json, records: records, call: call, zoneID: zone.dictionary, to: &text)
        if let cursor = page.first(where: { $0.key == "cursor" })?.value, json.first(cursor) == UInt8(ascii: "\"") {
            text += ",\"continuationMarker\":"
            json.append(cursor, to: &text)
        }
        text += "}"
        return WebServicesBody(text: text)
    }

    static let lookupDocument = """
        query WebServicesLookup($scope: DatabaseScope!, $zone: ZoneID!, $names: [String!]!, $keys: [String!]) \
        { lookup(scope: $scope, zone: $zone, recordNames: $names) { recordName record { \(WebServicesRecord.selection) } \
        error { code message } } }
        """

    static func lookup(_ call: WebServicesCall) async throws -> WebServicesBody {
        let zone = try call.zone(call.body["zoneID"])
        guard case .array(let items)? = call.body["records"], !items.isEmpty else {
            throw QueryError(.badRequest, "records/lookup needs records, a list of {\"recordName\": …}")
        }
        var names: [JSONValue] = []
        var shares: [Int: JSONValue] = [:]
        for (index, item) in items.enumerated() {
            guard case .object(let record) = item, case .string(let name)? = record["recordName"] else {
                throw QueryError(.badRequest, "records[\(index)] needs a recordName")
            }
            if WebServicesShares.isShare(recordType: nil, recordName: name) {
                shares[index] = await WebServicesShares.lookup(call, name: name, zone: zone)
            } else {
                names.append(.string(name))
            }
        }
        if names.isEmpty { return WebServicesBody(["records": .array(items.indices.compactMap { shares[$0] })]) }
        let answer = try await call.bridge.run(lookupDocument, [
            "scope": call.scope, "zone": zone.input, "names": .array(names), "keys": try call.desiredKeys(),
        ])
        guard case .array(let results) = answer else { return WebServicesBody(["records": .array([])]) }
        var found: [JSONValue] = []
        for case .object(let result) in results {
            if let record = result["record"], !record.isNull { found.append(record) }
        }
        let schemas = try await call.schemas(of: WebServicesRecord.recordTypes(in: found))
        let zoneID = zone.dictionary.jsonText
        var text = "{\"records\":["
        var resultsInOrder = results[...]
        for index in items.indices {
            if index > 0 { text += "," }
            if let share = shares[index] { share.appendJSON(to: &text); continue }
            guard case .object(let result)? = resultsInOrder.popFirst() else { text += "null"; continue }
            if let record = result["record"], !record.isNull {
                WebServicesRecordText.append(record, zoneID: zoneID, schemas: schemas, numbersAsStrings: call.numbersAsStrings, to: &text)
            } else {
                var error: [String: JSONValue] = [:]
                if case .object(let found)? = result["error"] { error = found }
                let code = (error["code"]?.stringValue).flatMap(ErrorCode.init(rawValue:)) ?? .unknownItem
                call.itemError("recordName", result["recordName"] ?? .null, code: WebServicesCode(code),
                               reason: error["message"]?.stringValue ?? "record not found").appendJSON(to: &text)
            }
        }
        text += "]}"
        return WebServicesBody(text: text)
    }

    static let changesDocument = """
        query WebServicesZoneChanges($scope: DatabaseScope!, $zone: ZoneID!, $since: String, $limit: Int, $keys: [String!]) \
        { zoneChanges(scope: $scope, zone: $zone, since: $since, limit: $limit) { changed { \(WebServicesRecord.selection) } \
        deleted { recordName recordType } token moreComing } }
        """

    /// One zone's changes since `syncToken`, as changes/zone and
    /// records/changes answer them: `(records, syncToken, moreComing)`.
    static func zoneChanges(
        _ call: WebServicesCall, zone: WebServicesCall.Zone, syncToken: String?, limit: Int64?, keys: JSONValue,
        recordTypes: Set<String>?
    ) async throws -> (records: String, syncToken: JSONValue, moreComing: JSONValue) {
        // Read as text: the changed records' bytes are copied, not parsed.
        guard let answer = try await call.bridge.runText(changesDocument, [
            "scope": call.scope, "zone": zone.input, "since": syncToken.map(JSONValue.string) ?? .null,
            "limit": limit.map(JSONValue.int) ?? .int(200), "keys": keys,
        ]) else { return ("[]", .null, .bool(false)) }
        let json = RawJSON(answer)
        let page = json.members(json.whole)
        func member(_ key: String) -> Range<Int>? { page.first { $0.key == key }?.value }
        func wanted(_ item: Range<Int>) -> Bool {
            guard let recordTypes else { return true }
            return json.members(item).first { $0.key == "recordType" }.flatMap { json.string($0.value) }.map(recordTypes.contains) ?? false
        }
        let changed = (member("changed").map(json.elements) ?? []).filter(wanted)
        let deleted = (member("deleted").map(json.elements) ?? []).filter(wanted)
        var records = ""
        try await WebServicesRecordText.append(json, records: changed, call: call, zoneID: zone.dictionary, to: &records)
        if !deleted.isEmpty {
            records.removeLast()   // the list's ]: the tombstones follow its records
            let zoneID = zone.dictionary.jsonText
            for (index, tombstone) in deleted.enumerated() {
                if index > 0 || !changed.isEmpty { records += "," }
                let parts = json.members(tombstone)
                records += "{\"recordName\":"
                json.append(parts.first { $0.key == "recordName" }?.value ?? 0..<0, to: &records)
                records += ",\"recordType\":"
                json.append(parts.first { $0.key == "recordType" }?.value ?? 0..<0, to: &records)
                records += ",\"deleted\":true,\"zoneID\":" + zoneID + "}"
            }
            records += "]"
        }
        let token = member("token").flatMap { json.string($0) }.map(JSONValue.string) ?? .null
        let moreComing: JSONValue = member("moreComing").map { json.first($0) == UInt8(ascii: "t") } .map(JSONValue.bool) ?? .bool(false)
        return (records, token, moreComing)
    }

    /// `records/changes`: the reference's older one-zone feed.
    static func changes(_ call: WebServicesCall) async throws -> WebServicesBody {
        let zone = try call.zone(call.body["zoneID"])
        let limit = try call.integer("resultsLimit")
        let feed = try await zoneChanges(call, zone: zone, syncToken: try call.string("syncToken"), limit: limit,
                                         keys: try call.desiredKeys(), recordTypes: nil)
        var text = "{\"records\":" + feed.records + ",\"syncToken\":"
        feed.syncToken.appendJSON(to: &text)
        text += ",\"moreComing\":"
        feed.moreComing.appendJSON(to: &text)
        text += ",\"reverse\":false}"
        return WebServicesBody(text: text)
    }
}
