import CanopyPlanner

/// Records between Canopy's GraphQL shape and the reference's record
/// dictionary: what every records endpoint selects, and how an answered
/// record is written back (`fields` typed, `created`/`modified` with
/// `deviceID`, `parent` as a dictionary, `deleted`, `zoneID`).
enum WebServicesRecord {
    /// The selection every Web Services record asks of `Record`; `$keys` is
    /// the request's `desiredKeys` (null: every field).
    static let selection = "recordName recordType recordChangeTag parent fields(keys: $keys) created { timestamp userRecordName } modified { timestamp userRecordName } share { rootRecordName }"

    /// The `deviceID` answered in `created` and `modified`: Canopy does not
    /// keep which device wrote a record (docs/WEB_SERVICES.md).
    static let deviceID = "canopy"

    /// A record of a GraphQL answer as the reference's record dictionary.
    /// `schemas` gives each record type's field types, for the type tags
    /// JSON cannot tell (a whole DOUBLE).
    static func dictionary(
        _ record: JSONValue, zoneID: JSONValue, schemas: [String: RecordSchema], numbersAsStrings: Bool
    ) -> JSONValue {
        guard case .object(let graphQL) = record else { return record }
        var out: [String: JSONValue] = [
            "recordName": graphQL["recordName"] ?? .null,
            "recordType": graphQL["recordType"] ?? .null,
            "recordChangeTag": graphQL["recordChangeTag"] ?? .null,
            "deleted": .bool(false),
            "zoneID": zoneID,
        ]
        if case .object(let fields)? = graphQL["fields"] {
            let schema = graphQL["recordType"]?.stringValue.flatMap { schemas[$0] }
            var typed: [String: JSONValue] = [:]
            typed.reserveCapacity(fields.count)
            for (name, value) in fields {
                typed[name] = WebServicesFieldValue.webServicesField(value, type: schema?[name], numbersAsStrings: numbersAsStrings)
            }
            out["fields"] = .object(typed)
        }
        for stamp in ["created", "modified"] {
            if case .object(let value)? = graphQL[stamp] {
                let milliseconds: JSONValue = switch value["timestamp"] {
                case .double(let number)?: Int64(exactly: number.rounded()).map(JSONValue.int) ?? .double(number)
                case let other?: other
                case nil: .null
                }
                out[stamp] = .object([
                    "timestamp": milliseconds, "userRecordName": value["userRecordName"] ?? .null, "deviceID": .string(deviceID),
                ])
            }
        }
        if case .object(let share)? = graphQL["share"] {
            out["share"] = .object([
                "recordName": .string(WebServicesShares.recordName(root: share["rootRecordName"]?.stringValue)), "zoneID": zoneID,
            ])
        }
        if case .string(let parent)? = graphQL["parent"] {
            out["parent"] = .object(["recordName": .string(parent)])
        }
        return .object(out)
    }

    /// The record types an answer holds (for their schemas).
    static func recordTypes(in records: [JSONValue]) -> Set<String> {
        var types = Set<String>()
        for case .object(let record) in records {
            if case .string(let type)? = record["recordType"] { types.insert(type) }
        }
        return types
    }
}
