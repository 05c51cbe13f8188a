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
}
