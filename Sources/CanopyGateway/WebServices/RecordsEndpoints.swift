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
        let page = json.members(json.root)
        let records = json.value(of: "records", in: page).map(json.elements) ?? []
        var out = Array("{\"records\":".utf8)
        out.reserveCapacity(json.bytes.count + json.bytes.count / 2)
        try await WebServicesRecordText.append(json, records: records, call: call, zoneID: zone.dictionary, to: &out)
        if let cursor = json.value(of: "cursor", in: page), json.first(cursor) == UInt8(ascii: "\"") {
            out.append(contentsOf: ",\"continuationMarker\":".utf8)
            json.append(cursor, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return WebServicesBody(text: String(decoding: out, as: UTF8.self))
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
        // Read as text, as records/query reads its page.
        guard let answer = try await call.bridge.runText(lookupDocument, [
            "scope": call.scope, "zone": zone.input, "names": .array(names), "keys": try call.desiredKeys(),
        ]) else { return WebServicesBody(["records": .array([])]) }
        let json = RawJSON(answer)
        let results = json.elements(json.root).map { json.members($0) }
        var types = Set<String>()
        for result in results {
            if let record = json.value(of: "record", in: result), json.first(record) == UInt8(ascii: "{"),
               let type = json.value(of: "recordType", in: json.members(record)).flatMap({ json.string($0) }) {
                types.insert(type)
            }
        }
        let schemas = try await call.schemas(of: types)
        let zoneID = Array(zone.dictionary.jsonText.utf8)
        var out = Array("{\"records\":[".utf8)
        out.reserveCapacity(json.bytes.count + 512)
        var resultsInOrder = results[...]
        for index in items.indices {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            if let share = shares[index] { out.append(contentsOf: share.jsonText.utf8); continue }
            guard let result = resultsInOrder.popFirst() else { out.append(contentsOf: "null".utf8); continue }
            if let record = json.value(of: "record", in: result), json.first(record) == UInt8(ascii: "{") {
                WebServicesRecordText.append(json, record: record, zoneID: zoneID, schemas: schemas, numbersAsStrings: call.numbersAsStrings, to: &out)
            } else {
                let error = json.value(of: "error", in: result).map { json.members($0) } ?? []
                let code = json.value(of: "code", in: error).flatMap { json.string($0) }.flatMap(ErrorCode.init(rawValue:)) ?? .unknownItem
                let name = json.value(of: "recordName", in: result).flatMap { json.string($0) }.map(JSONValue.string) ?? .null
                let reason = json.value(of: "message", in: error).flatMap { json.string($0) } ?? "record not found"
                out.append(contentsOf: call.itemError("recordName", name, code: WebServicesCode(code), reason: reason).jsonText.utf8)
            }
        }
        out.append(contentsOf: "]}".utf8)
        return WebServicesBody(text: String(decoding: out, as: UTF8.self))
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
        let page = json.members(json.root)
        func wanted(_ item: Int) -> Bool {
            guard let recordTypes else { return true }
            return json.value(of: "recordType", in: json.members(item)).flatMap { json.string($0) }.map(recordTypes.contains) ?? false
        }
        let changed = (json.value(of: "changed", in: page).map(json.elements) ?? []).filter(wanted)
        let deleted = (json.value(of: "deleted", in: page).map(json.elements) ?? []).filter(wanted)
        var out: [UInt8] = []
        out.reserveCapacity(json.bytes.count + json.bytes.count / 2)
        try await WebServicesRecordText.append(json, records: changed, call: call, zoneID: zone.dictionary, to: &out)
        if !deleted.isEmpty {
            out.removeLast()   // the list's ]: the tombstones follow its records
            let zoneID = Array(zone.dictionary.jsonText.utf8)
            for (index, tombstone) in deleted.enumerated() {
                if index > 0 || !changed.isEmpty { out.append(UInt8(ascii: ",")) }
                let parts = json.members(tombstone)
                out.append(contentsOf: "{\"recordName\":".utf8)
                json.append(json.value(of: "recordName", in: parts) ?? -1, to: &out)
                out.append(contentsOf: ",\"recordType\":".utf8)
                json.append(json.value(of: "recordType", in: parts) ?? -1, to: &out)
                out.append(contentsOf: ",\"deleted\":true,\"zoneID\":".utf8)
                out.append(contentsOf: zoneID)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "]"))
        }
        let records = String(decoding: out, as: UTF8.self)
        let token = json.value(of: "token", in: page).flatMap { json.string($0) }.map(JSONValue.string) ?? .null
        let moreComing: JSONValue = .bool(json.value(of: "moreComing", in: page).map { json.first($0) == UInt8(ascii: "t") } ?? false)
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
