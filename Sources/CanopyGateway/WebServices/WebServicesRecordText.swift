import CanopyEncoding
import CanopyPlanner

/// Writes a GraphQL record (as ``WebServicesRecord/selection`` asks for it)
/// as the reference's record dictionary straight into JSON text: the same
/// keys and values as ``WebServicesRecord/dictionary``, with no dictionary
/// built on the way.
enum WebServicesRecordText {
    static func append(
        _ record: JSONValue, zoneID: String, schemas: [String: RecordSchema], numbersAsStrings: Bool, to text: inout String
    ) {
        guard case .object(let graphQL) = record else { record.appendJSON(to: &text); return }
        text += "{\"recordName\":"
        (graphQL["recordName"] ?? .null).appendJSON(to: &text)
        text += ",\"recordType\":"
        let recordType = graphQL["recordType"] ?? .null
        recordType.appendJSON(to: &text)
        text += ",\"recordChangeTag\":"
        (graphQL["recordChangeTag"] ?? .null).appendJSON(to: &text)
        text += ",\"deleted\":false,\"zoneID\":"
        text += zoneID
        if case .object(let fields)? = graphQL["fields"] {
            let schema = recordType.stringValue.flatMap { schemas[$0] }
            text += ",\"fields\":{"
            var first = true
            for (name, value) in fields {
                if !first { text += "," }
                first = false
                JSONString.append(name, to: &text)
                text += ":{\"value\":"
                let (converted, tag) = WebServicesFieldValue.webServicesValue(value, type: schema?[name], numbersAsStrings: numbersAsStrings)
                converted.appendJSON(to: &text)
                text += ",\"type\":\""
                text += tag
                text += "\"}"
            }
            text += "}"
        }
        for stamp in ["created", "modified"] {
            guard case .object(let value)? = graphQL[stamp] else { continue }
            text += ",\""
            text += stamp
            text += "\":{\"timestamp\":"
            switch value["timestamp"] {
            case .double(let number)?:
                if let whole = Int64(exactly: number.rounded()) { text += String(whole) } else { JSONValue.double(number).appendJSON(to: &text) }
            case let other?: other.appendJSON(to: &text)
            case nil: text += "null"
            }
            text += ",\"userRecordName\":"
            (value["userRecordName"] ?? .null).appendJSON(to: &text)
            text += ",\"deviceID\":\"\(WebServicesRecord.deviceID)\"}"
        }
        if case .object(let share)? = graphQL["share"] {
            text += ",\"share\":{\"recordName\":"
            JSONString.append(WebServicesShares.recordName(root: share["rootRecordName"]?.stringValue), to: &text)
            text += ",\"zoneID\":"
            text += zoneID
            text += "}"
        }
        if case .string(let parent)? = graphQL["parent"] {
            text += ",\"parent\":{\"recordName\":"
            JSONString.append(parent, to: &text)
            text += "}"
        }
        text += "}"
    }

    /// `[record, …]` for GraphQL records, with their record types' schemas.
    static func append(_ records: [JSONValue], call: WebServicesCall, zoneID: JSONValue, to text: inout String) async throws {
        let schemas = try await call.schemas(of: WebServicesRecord.recordTypes(in: records))
        let zone = zoneID.jsonText
        text += "["
        for (index, record) in records.enumerated() {
            if index > 0 { text += "," }
            append(record, zoneID: zone, schemas: schemas, numbersAsStrings: call.numbersAsStrings, to: &text)
        }
        text += "]"
    }

    /// A record of an answer's text (`json`, `range`) written as the
    /// reference's record dictionary, its values' bytes copied where they
    /// need no change (strings, numbers, stamps) and only typed values and
    /// lists parsed: what ``append(_:zoneID:schemas:numbersAsStrings:to:)``
    /// writes, without parsing the record.
    static func append(
        _ json: RawJSON, record range: Range<Int>, zoneID: String, schemas: [String: RecordSchema], numbersAsStrings: Bool, to text: inout String
    ) {
        let members = json.members(range)
        func member(_ key: String) -> Range<Int>? { members.first { $0.key == key }?.value }
        let null = 0..<0
        text += "{\"recordName\":"
        append(json, member("recordName") ?? null, to: &text)
        text += ",\"recordType\":"
        let recordType = member("recordType") ?? null
        append(json, recordType, to: &text)
        text += ",\"recordChangeTag\":"
        append(json, member("recordChangeTag") ?? null, to: &text)
        text += ",\"deleted\":false,\"zoneID\":"
        text += zoneID
        if let fields = member("fields"), json.first(fields) == UInt8(ascii: "{") {
            let schema = json.string(recordType).flatMap { schemas[$0] }
            text += ",\"fields\":{"
            for (index, field) in json.members(fields).enumerated() {
                if index > 0 { text += "," }
                JSONString.append(field.key, to: &text)
                text += ":{\"value\":"
                let tag = appendValue(json, field.value, type: schema?[field.key], numbersAsStrings: numbersAsStrings, to: &text)
                text += ",\"type\":\""
                text += tag
                text += "\"}"
            }
            text += "}"
        }
        for stamp in ["created", "modified"] {
            guard let value = member(stamp), json.first(value) == UInt8(ascii: "{") else { continue }
            let parts = json.members(value)
            text += ",\""
            text += stamp
            text += "\":{\"timestamp\":"
            append(json, parts.first { $0.key == "timestamp" }?.value ?? null, to: &text)
            text += ",\"userRecordName\":"
            append(json, parts.first { $0.key == "userRecordName" }?.value ?? null, to: &text)
            text += ",\"deviceID\":\"\(WebServicesRecord.deviceID)\"}"
        }
        if let share = member("share"), json.first(share) == UInt8(ascii: "{") {
            let root = json.members(share).first { $0.key == "rootRecordName" }?.value
            text += ",\"share\":{\"recordName\":"
            if let root, json.first(root) == UInt8(ascii: "\"") {
                // The root's name as written (escapes and all) after the prefix: still one JSON string.
                text += "\"\(WebServicesShares.hierarchyPrefix)"
                json.append((root.lowerBound + 1)..<root.upperBound, to: &text)
            } else {
                JSONString.append(WebServicesShares.zoneShareName, to: &text)
            }
            text += ",\"zoneID\":"
            text += zoneID
            text += "}"
        }
        if let parent = member("parent"), json.first(parent) == UInt8(ascii: "\"") {
            text += ",\"parent\":{\"recordName\":"
            json.append(parent, to: &text)
            text += "}"
        }
        text += "}"
    }

    /// A value's bytes, or null when there is none.
    private static func append(_ json: RawJSON, _ range: Range<Int>, to text: inout String) {
        if range.isEmpty { text += "null" } else { json.append(range, to: &text) }
    }

    /// A field's value as the reference's, and its type tag: strings and
    /// numbers copied (a number typed by the schema, else by its spelling),
    /// booleans as 0 or 1, typed objects and lists converted.
    private static func appendValue(_ json: RawJSON, _ range: Range<Int>, type: FieldType?, numbersAsStrings: Bool, to text: inout String) -> String {
        switch json.first(range) {
        case UInt8(ascii: "\"")?:
            json.append(range, to: &text)
            return "STRING"
        case UInt8(ascii: "t")?:
            text += "1"
            return "INT64"
        case UInt8(ascii: "f")?:
            text += "0"
            return "INT64"
        case let byte? where byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")):
            let spelledDouble = json.bytes[range].contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
            let isDouble = type == .double || (type != .int64 && spelledDouble)
            if numbersAsStrings || (type == .int64 && spelledDouble) {
                // Through the value, so a string holds the number's own spelling of its type.
                let value = (try? JSONValue(parsing: String(json.text(range)))) ?? .null
                let (converted, tag) = WebServicesFieldValue.webServicesValue(value, type: type, numbersAsStrings: numbersAsStrings)
                converted.appendJSON(to: &text)
                return tag
            }
            json.append(range, to: &text)
            return isDouble ? "DOUBLE" : "INT64"
        default:
            let value = (try? JSONValue(parsing: String(json.text(range)))) ?? .null
            let (converted, tag) = WebServicesFieldValue.webServicesValue(value, type: type, numbersAsStrings: numbersAsStrings)
            converted.appendJSON(to: &text)
            return tag
        }
    }

    /// `[record, …]` for the records of an answer's text, with their record types' schemas.
    static func append(_ json: RawJSON, records: [Range<Int>], call: WebServicesCall, zoneID: JSONValue, to text: inout String) async throws {
        var types = Set<String>()
        for record in records {
            if let type = json.members(record).first(where: { $0.key == "recordType" }).flatMap({ json.string($0.value) }) { types.insert(type) }
        }
        let schemas = try await call.schemas(of: types)
        let zone = zoneID.jsonText
        text += "["
        for (index, record) in records.enumerated() {
            if index > 0 { text += "," }
            append(json, record: record, zoneID: zone, schemas: schemas, numbersAsStrings: call.numbersAsStrings, to: &text)
        }
        text += "]"
    }
}
