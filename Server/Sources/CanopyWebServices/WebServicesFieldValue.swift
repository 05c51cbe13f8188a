import CanopyPlanner

import Foundation

/// Field values of a request, from the reference's typed form (`{"value":
/// …, "type": "TIMESTAMP"}`) to Canopy's (docs/API.md §4); answers are written
/// the other way by PostgreSQL (sql/functions/cloudkit_records.sql). The reference's type tags:
/// `STRING`, `INT64`, `DOUBLE`, `TIMESTAMP`, `BYTES`, `REFERENCE`,
/// `ASSETID` (also read as `ASSET`), `LOCATION`, and each as `<TYPE>_LIST`.
/// Canopy's `BOOLEAN` answers as `INT64` 0 or 1, as CloudKit stores
/// booleans (docs/WEB_SERVICES.md, "Field values"). Pure: the gateway's
/// Web Services door and the fuzzer use it.
public enum WebServicesFieldValue {
    // MARK: Requests

    /// A record field dictionary of a request as Canopy's value, or a
    /// sentence saying what is wrong with it. `existing` is the field's type
    /// in the record type's schema, if it has one (a 0 or 1 saved to a
    /// BOOLEAN field is a boolean).
    public static func canopyValue(_ field: JSONValue, name: String, existing: FieldType?) throws(QueryError) -> JSONValue {
        guard case .object(let dictionary) = field, let value = dictionary["value"] else {
            throw QueryError(.badRequest, "field \(name): give a record field dictionary, {\"value\": …, \"type\": …}")
        }
        let type: String?
        switch dictionary["type"] {
        case nil, .null?: type = nil
        case .string(let text)?: type = text
        case let other?: throw QueryError(.badRequest, "field \(name): type must be a string such as STRING or INT64, not \(other.typeName)")
        }
        return try convert(value, type: type, name: name, existing: existing)
    }

    private static func convert(_ value: JSONValue, type: String?, name: String, existing: FieldType?) throws(QueryError) -> JSONValue {
        if value.isNull { return .null }
        guard let type else { return try inferred(value, name: name, existing: existing) }
        if type.hasSuffix("_LIST") {
            guard case .array(let items) = value else {
                throw QueryError(.badRequest, "field \(name): \(Article.indefinite(type)) value is a list, not \(value.typeName)")
            }
            let element = String(type.dropLast(5))
            let elementType: FieldType? = if case .list(let inner)? = existing { inner } else { nil }
            var converted: [JSONValue] = []
            converted.reserveCapacity(items.count)
            for item in items { converted.append(try convert(item, type: element, name: name, existing: elementType)) }
            return .array(converted)
        }
        switch type {
        case "STRING":
            guard case .string = value else { throw mismatch(name, type, value) }
            return value
        case "INT64":
            switch value {
            case .int(let number):
                if existing == .boolean, number == 0 || number == 1 { return .bool(number == 1) }
                return value
            case .string(let text):
                guard let number = Int64(text) else { throw mismatch(name, type, value) }
                return .int(number)
            case .bool(let flag): return existing == .boolean ? value : .int(flag ? 1 : 0)
            default: throw mismatch(name, type, value)
            }
        case "DOUBLE":
            switch value {
            case .int(let number): return .double(Double(number))
            case .double: return value
            case .string(let text):
                guard let number = Double(text), number.isFinite else { throw mismatch(name, type, value) }
                return .double(number)
            default: throw mismatch(name, type, value)
            }
        case "TIMESTAMP":
            switch value {
            case .int(let milliseconds): return .object(["type": .string("TIMESTAMP"), "value": .int(milliseconds)])
            case .double(let milliseconds):
                // A double past Int64 is no time (fuzzing found the trap of converting it).
                guard let whole = Int64(exactly: milliseconds.rounded()) else {
                    throw QueryError(.badRequest, "field \(name): a TIMESTAMP is milliseconds since 1970 within ±9.2e18")
                }
                return .object(["type": .string("TIMESTAMP"), "value": .int(whole)])
            default: throw mismatch(name, type, value)
            }
        case "BYTES":
            guard case .string(let text) = value, Data(base64Encoded: text) != nil else {
                throw QueryError(.badRequest, "field \(name): a BYTES value is a base64 string")
            }
            return .object(["type": .string("BYTES"), "base64": value])
        case "REFERENCE":
            guard case .object(let reference) = value, case .string(let recordName)? = reference["recordName"] else {
                throw QueryError(.badRequest, "field \(name): a REFERENCE value is {\"recordName\": …, \"action\": …}")
            }
            let action: String
            switch reference["action"] {
            case nil, .null?, .string("NONE")?: action = "NONE"
            case .string("DELETE_SELF")?: action = "DELETE_SELF"
            // The database checks the target exists and keeps it as NONE
            // (sql/triggers/records.sql, VALIDATING_REFERENCE_ERROR if not).
            case .string("VALIDATE")?: action = "VALIDATE"
            case let other?:
                throw QueryError(.badRequest, "field \(name): a reference's action is NONE, DELETE_SELF or VALIDATE, not \(other.stringValue ?? other.typeName)")
            }
            return .object(["type": .string("REFERENCE"), "recordName": .string(recordName), "action": .string(action)])
        case "LOCATION":
            guard case .object(let location) = value, let latitude = location["latitude"], let longitude = location["longitude"] else {
                throw QueryError(.badRequest, "field \(name): a LOCATION value is {\"latitude\": …, \"longitude\": …}")
            }
            // The Location Dictionary's other six keys, kept when given
            // (null or absent: not kept); the database checks each is a number.
            var stored: [String: JSONValue] = ["type": .string("LOCATION"), "latitude": latitude, "longitude": longitude]
            for key in Self.locationKeys {
                if let extra = location[key], !extra.isNull { stored[key] = extra }
            }
            for key in location.keys where key != "latitude" && key != "longitude" && !Self.locationKeys.contains(key) {
                throw QueryError(.badRequest, "field \(name): a LOCATION has no key \(key.prefix(40)); its keys are latitude, longitude, \(Self.locationKeys.joined(separator: ", "))")
            }
            return .object(stored)
        case "ASSETID", "ASSET":
            guard case .object(let asset) = value, case .string(let receipt)? = asset["receipt"] else {
                throw QueryError(.badRequest, "field \(name): an asset is saved with the receipt assets/upload's upload answered, {\"receipt\": …, \"fileChecksum\": …, \"size\": …}")
            }
            return .object(["type": .string("ASSET"), "uploadToken": .string(receipt)])
        default:
            throw QueryError(.badRequest, "field \(name): unknown type \(type.prefix(40)); the types are STRING, INT64, DOUBLE, TIMESTAMP, BYTES, REFERENCE, ASSETID, LOCATION and their _LIST forms")
        }
    }

    /// A value sent without its type, as the reference allows: read from
    /// its JSON shape (an object by its keys).
    private static func inferred(_ value: JSONValue, name: String, existing: FieldType?) throws(QueryError) -> JSONValue {
        switch value {
        case .string, .double, .bool: return value
        case .int(let number):
            if existing == .boolean, number == 0 || number == 1 { return .bool(number == 1) }
            if existing == .double { return .double(Double(number)) }
            if existing == .timestamp { return .object(["type": .string("TIMESTAMP"), "value": value]) }
            return value
        case .array(let items):
            let elementType: FieldType? = if case .list(let inner)? = existing { inner } else { nil }
            var converted: [JSONValue] = []
            for item in items { converted.append(try inferred(item, name: name, existing: elementType)) }
            return .array(converted)
        case .object(let object):
            if object["recordName"] != nil { return try convert(value, type: "REFERENCE", name: name, existing: existing) }
            if object["latitude"] != nil { return try convert(value, type: "LOCATION", name: name, existing: existing) }
            if object["receipt"] != nil { return try convert(value, type: "ASSETID", name: name, existing: existing) }
            throw QueryError(.badRequest, "field \(name): give the value's type: an object is a REFERENCE, LOCATION or ASSETID")
        case .null: return .null
        }
    }

    private static func mismatch(_ name: String, _ type: String, _ value: JSONValue) -> QueryError {
        QueryError(.badRequest, "field \(name): \(Article.indefinite(type)) value cannot be \(value.typeName)")
    }

    /// The Location Dictionary's keys beyond latitude and longitude.
    public static let locationKeys = ["horizontalAccuracy", "verticalAccuracy", "altitude", "speed", "course", "timestamp"]
}
