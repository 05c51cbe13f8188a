import CanopyPlanner

/// Writes a GraphQL record (as ``WebServicesRecord/selection`` asks for it)
/// as the reference's record dictionary straight into JSON text: the same
/// keys and values as ``WebServicesRecord/dictionary``, with no dictionary
/// built on the way (the answers of many records: query, lookup, feeds).
enum WebServicesRecordText {
    /// A record of an answer's text (`json`, `range`) written as the
    /// reference's record dictionary into `out` (UTF-8), its values' bytes
    /// copied where they need no change (strings, numbers, stamps) and only
    /// typed values and lists parsed.
    static func append(
        _ json: RawJSON, record members: Int, zoneID: [UInt8], schemas: [String: RecordSchema], numbersAsStrings: Bool,
        to out: inout [UInt8]
    ) {
        func put(_ literal: StaticString) { literal.withUTF8Buffer { out.append(contentsOf: $0) } }
        func copy(_ value: Int?) {
            if let value, json.first(value) != nil { json.append(value, to: &out) } else { put("null") }
        }
        put("{\"recordName\":")
        copy(json.value(of: "recordName", in: members))
        put(",\"recordType\":")
        let recordType = json.value(of: "recordType", in: members)
        copy(recordType)
        put(",\"recordChangeTag\":")
        copy(json.value(of: "recordChangeTag", in: members))
        put(",\"deleted\":false,\"zoneID\":")
        out.append(contentsOf: zoneID)
        if let fields = json.value(of: "fields", in: members), json.first(fields) == UInt8(ascii: "{") {
            let schema = recordType.flatMap { json.string($0) }.flatMap { schemas[$0] }
            put(",\"fields\":{")
            var firstField = true
            json.forEachMember(of: fields) { key, value in
                if !firstField { put(",") }
                firstField = false
                json.append(key, to: &out)
                put(":{\"value\":")
                // The schema's type matters for numbers and lists alone: no key string for the rest.
                let needsType = json.first(value) == UInt8(ascii: "[") || json.first(value).map { $0 == UInt8(ascii: "-") || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) } == true
                let type = needsType ? schema.flatMap { $0[json.string(key) ?? ""] } : nil
                let tag = appendValue(json, value, type: type, numbersAsStrings: numbersAsStrings, to: &out)
                put(",\"type\":\"")
                out.append(contentsOf: tag.utf8)
                put("\"}")
            }
            put("}")
        }
        for (stamp, key) in [(StaticString("created"), StaticString(",\"created\":{\"timestamp\":")),
                             (StaticString("modified"), StaticString(",\"modified\":{\"timestamp\":"))] {
            guard let parts = json.value(of: stamp, in: members), json.first(parts) == UInt8(ascii: "{") else { continue }
            put(key)
            copy(json.value(of: "timestamp", in: parts))
            put(",\"userRecordName\":")
            copy(json.value(of: "userRecordName", in: parts))
            put(",\"deviceID\":\"canopy\"}")
        }
        if let share = json.value(of: "share", in: members), json.first(share) == UInt8(ascii: "{") {
            let root = json.value(of: "rootRecordName", in: share)
            put(",\"share\":{\"recordName\":")
            if let root, json.first(root) == UInt8(ascii: "\"") {
                // The root's name as written (escapes and all) after the prefix: still one JSON string.
                put("\"cloudkit.share.")
                let written = json.range(root)
                json.append((written.lowerBound + 1)..<written.upperBound, to: &out)
            } else {
                put("\"cloudkit.zoneshare\"")
            }
            put(",\"zoneID\":")
            out.append(contentsOf: zoneID)
            put("}")
        }
        if let parent = json.value(of: "parent", in: members), json.first(parent) == UInt8(ascii: "\"") {
            put(",\"parent\":{\"recordName\":")
            json.append(parent, to: &out)
            put("}")
        }
        put("}")
    }

    /// The Location Dictionary's keys beyond latitude and longitude
    /// (``WebServicesFieldValue/locationKeys``).
    static let locationKeys: [StaticString] = ["horizontalAccuracy", "verticalAccuracy", "altitude", "speed", "course", "timestamp"]

    /// A field's value as the reference's, and its type tag: strings and
    /// numbers copied (a number typed by the schema, else by its spelling),
    /// booleans as 0 or 1, typed objects by their members, lists element by
    /// element; only numbers asked as strings go through a parse.
    private static func appendValue(_ json: RawJSON, _ range: Int, type: FieldType?, numbersAsStrings: Bool, to out: inout [UInt8]) -> String {
        func put(_ literal: StaticString) { literal.withUTF8Buffer { out.append(contentsOf: $0) } }
        func copy(_ value: Int?) {
            if let value, json.first(value) != nil { json.append(value, to: &out) } else { put("null") }
        }
        switch json.first(range) {
        case UInt8(ascii: "\"")?:
            json.append(range, to: &out)
            return "STRING"
        case UInt8(ascii: "t")?:
            out.append(UInt8(ascii: "1"))
            return "INT64"
        case UInt8(ascii: "f")?:
            out.append(UInt8(ascii: "0"))
            return "INT64"
        case UInt8(ascii: "{")?:
            let members = range
            let kind = json.value(of: "type", in: members) ?? -1
            if json.isString(kind, "TIMESTAMP") {
                copy(json.value(of: "value", in: members))
                return "TIMESTAMP"
            }
            switch json.string(kind) {
            case "BYTES"?:
                copy(json.value(of: "base64", in: members))
                return "BYTES"
            case "REFERENCE"?:
                put("{\"recordName\":")
                copy(json.value(of: "recordName", in: members))
                put(",\"action\":")
                if let action = json.value(of: "action", in: members) { json.append(action, to: &out) } else { put("\"NONE\"") }
                put("}")
                return "REFERENCE"
            case "LOCATION"?:
                put("{\"latitude\":")
                copy(json.value(of: "latitude", in: members))
                put(",\"longitude\":")
                copy(json.value(of: "longitude", in: members))
                for key in Self.locationKeys {
                    if let extra = json.value(of: key, in: members) {
                        put(","); out.append(UInt8(ascii: "\"")); key.withUTF8Buffer { out.append(contentsOf: $0) }; put("\":")
                        json.append(extra, to: &out)
                    }
                }
                put("}")
                return "LOCATION"
            case "ASSET"?:
                put("{\"fileChecksum\":")
                copy(json.value(of: "sha256", in: members))
                put(",\"size\":")
                copy(json.value(of: "size", in: members))
                if let url = json.value(of: "downloadURL", in: members) {
                    put(",\"downloadURL\":")
                    json.append(url, to: &out)
                }
                put("}")
                return "ASSETID"
            default:
                json.append(range, to: &out)
                return "STRING"
            }
        case UInt8(ascii: "[")?:
            let elementType: FieldType? = if case .list(let inner)? = type { inner } else { nil }
            var tag = elementType.map(WebServicesFieldValue.listTag) ?? "STRING"
            out.append(UInt8(ascii: "["))
            var firstElement = true
            json.forEachElement(of: range) { element in
                if !firstElement { out.append(UInt8(ascii: ",")) }
                firstElement = false
                tag = appendValue(json, element, type: elementType, numbersAsStrings: numbersAsStrings, to: &out)
            }
            out.append(UInt8(ascii: "]"))
            return tag + "_LIST"
        case let byte? where byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")):
            let spelledDouble = json.bytes[json.range(range)].contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
            if !numbersAsStrings && !(type == .int64 && spelledDouble) {
                json.append(range, to: &out)
                return type == .double || (type != .int64 && spelledDouble) ? "DOUBLE" : "INT64"
            }
            // Numbers as strings, and a whole INT64 written as a double: through the value.
            let value = (try? JSONValue(parsing: json.text(range))) ?? .null
            let (converted, tag) = WebServicesFieldValue.webServicesValue(value, type: type, numbersAsStrings: numbersAsStrings)
            out.append(contentsOf: converted.jsonText.utf8)
            return tag
        default:
            put("null")
            return type.map(WebServicesFieldValue.listTag) ?? "STRING"
        }
    }

    /// `[record, …]` for the records of an answer's text, with their record types' schemas.
    static func append(_ json: RawJSON, records: [Int], call: WebServicesCall, zoneID: JSONValue, to out: inout [UInt8]) async throws {
        var types = Set<String>()
        for record in records {
            if let type = json.value(of: "recordType", in: record).flatMap({ json.string($0) }) { types.insert(type) }
        }
        let schemas = try await call.schemas(of: types)
        let zone = Array(zoneID.jsonText.utf8)
        out.append(UInt8(ascii: "["))
        for (index, record) in records.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            append(json, record: record, zoneID: zone, schemas: schemas, numbersAsStrings: call.numbersAsStrings, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }
}
