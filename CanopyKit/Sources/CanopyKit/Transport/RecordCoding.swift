import Foundation

/// Records to and from the gateway's `Record` and `RecordInput`.
extension Record {
    /// A record as the server answered it, in the zone the caller addressed.
    convenience init(json: JSON, zoneID: RecordZone.ID) throws {
        guard let name = json["recordName"]?.string, let type = json["recordType"]?.string else {
            throw CanopyError(.serverResponseLost, "a record without its name or type")
        }
        var values: [String: FieldValue] = [:]
        for (key, value) in json["fields"]?.object ?? [:] {
            if let field = FieldValue(json: value, zoneID: zoneID) { values[key] = field }
        }
        func date(_ stamp: JSON?) -> Date? {
            stamp?["timestamp"]?.double.map { Date(timeIntervalSince1970: $0 / 1000) }
        }
        self.init(recordType: type, recordID: ID(recordName: name, zoneID: zoneID), values: values,
                  parent: json["parent"]?.string.map { Reference(recordID: ID(recordName: $0, zoneID: zoneID), action: .none) },
                  recordChangeTag: json["recordChangeTag"]?.string,
                  creationDate: date(json["created"]), modificationDate: date(json["modified"]),
                  creator: json["created"]?["userRecordName"]?.string, lastModifier: json["modified"]?["userRecordName"]?.string,
                  shareURL: json["share"]?["url"]?.string.flatMap(URL.init(string:)))
    }

    /// The `RecordInput` a save sends: every field, or with `.changedKeys`
    /// only those set since the fetch (as CloudKit sends them).
    func input(policy: Database.SavePolicy) throws -> JSON {
        let values = fieldValues
        let keys = policy == .changedKeys ? Set(changedKeys()) : Set(values.keys)
        var fields: [String: JSON] = [:]
        for key in keys {
            // A key set to nil is sent as null: CHANGED_KEYS removes it.
            fields[key] = try values[key]?.json(in: recordID.zoneID) ?? .null
        }
        var input: [String: JSON] = [
            "recordName": .string(recordID.recordName),
            "recordType": .string(recordType),
            "fields": .object(fields),
        ]
        if let tag = recordChangeTag { input["recordChangeTag"] = .string(tag) }
        if let parent { input["parent"] = .string(parent.recordID.recordName) }
        return .object(input)
    }
}

extension RecordZone.ID {
    /// The `ZoneID` input: the caller's own zones go without an owner.
    var json: JSON {
        if ownerName == CurrentUserDefaultName { return .object(["zoneName": .string(zoneName)]) }
        return .object(["zoneName": .string(zoneName), "ownerName": .string(ownerName)])
    }
}
