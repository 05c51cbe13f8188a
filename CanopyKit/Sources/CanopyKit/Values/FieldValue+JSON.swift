import Foundation

/// Field values to and from the gateway's `fields` JSON (docs/API.md §4, §11).
extension FieldValue {
    /// The JSON a save sends; an asset must have been uploaded first (its token set).
    func json(in zoneID: RecordZone.ID) throws -> JSON {
        switch self {
        case .string(let value): return .string(value)
        case .int64(let value): return .int(value)
        case .double(let value): return .double(value)
        case .bool(let value): return .bool(value)
        case .date(let value):
            return .object(["type": .string("TIMESTAMP"), "value": .int(Int64((value.timeIntervalSince1970 * 1000).rounded()))])
        case .bytes(let value):
            return .object(["type": .string("BYTES"), "base64": .string(value.base64EncodedString())])
        case .location(let value):
            var location: [String: JSON] = ["type": .string("LOCATION"), "latitude": .double(value.latitude), "longitude": .double(value.longitude)]
            for (key, number) in [("horizontalAccuracy", value.horizontalAccuracy), ("verticalAccuracy", value.verticalAccuracy),
                                  ("altitude", value.altitude), ("speed", value.speed), ("course", value.course)] {
                if let number { location[key] = .double(number) }
            }
            if let timestamp = value.timestamp { location["timestamp"] = .int(Int64((timestamp.timeIntervalSince1970 * 1000).rounded())) }
            return .object(location)
        case .reference(let value):
            guard value.recordID.zoneID.zoneName == zoneID.zoneName else {
                throw CanopyError(.invalidArguments, "a reference must point into the record's own zone (\(zoneID.zoneName)), not \(value.recordID.zoneID.zoneName)")
            }
            return .object(["type": .string("REFERENCE"), "recordName": .string(value.recordID.recordName), "action": .string(value.action.rawValue)])
        case .asset(let value):
            if let token = value.uploadToken {
                return .object(["type": .string("ASSET"), "uploadToken": .string(token)])
            }
            // An asset the record already holds is saved back as it was read.
            guard let sha256 = value.sha256 else {
                throw CanopyError(.invalidArguments, "an asset must be uploaded before its record is saved")
            }
            var members: [String: JSON] = ["type": .string("ASSET"), "sha256": .string(sha256)]
            if let size = value.size { members["size"] = .int(Int64(size)) }
            if let contentType = value.contentType { members["contentType"] = .string(contentType) }
            return .object(members)
        case .list(let values):
            return .array(try values.map { try $0.json(in: zoneID) })
        }
    }

    /// A value from a fetched record's `fields`.
    init?(json: JSON, zoneID: RecordZone.ID) {
        switch json {
        case .string(let value): self = .string(value)
        case .int(let value): self = .int64(value)
        case .double(let value): self = .double(value)
        case .bool(let value): self = .bool(value)
        case .array(let values): self = .list(values.compactMap { FieldValue(json: $0, zoneID: zoneID) })
        case .object(let members):
            switch members["type"]?.string {
            case "TIMESTAMP":
                guard let ms = members["value"]?.double else { return nil }
                self = .date(Date(timeIntervalSince1970: ms / 1000))
            case "BYTES":
                guard let text = members["base64"]?.string, let data = Data(base64Encoded: text) else { return nil }
                self = .bytes(data)
            case "LOCATION":
                guard let latitude = members["latitude"]?.double, let longitude = members["longitude"]?.double else { return nil }
                self = .location(Location(
                    latitude: latitude, longitude: longitude,
                    horizontalAccuracy: members["horizontalAccuracy"]?.double, verticalAccuracy: members["verticalAccuracy"]?.double,
                    altitude: members["altitude"]?.double, speed: members["speed"]?.double, course: members["course"]?.double,
                    timestamp: members["timestamp"]?.double.map { Date(timeIntervalSince1970: $0 / 1000) }
                ))
            case "REFERENCE":
                guard let name = members["recordName"]?.string else { return nil }
                let action = Record.Reference.Action(rawValue: members["action"]?.string ?? "NONE") ?? .none
                self = .reference(Record.Reference(recordID: Record.ID(recordName: name, zoneID: zoneID), action: action))
            case "ASSET":
                self = .asset(Asset(fileURL: nil, size: members["size"]?.int.map(Int.init), contentType: members["contentType"]?.string,
                                    sha256: members["sha256"]?.string, downloadURL: members["downloadURL"]?.string.flatMap(URL.init(string:)),
                                    uploadToken: nil))
            default: return nil
            }
        case .null: return nil
        }
    }
}
