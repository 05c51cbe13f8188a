import CanopyPlanner

/// The pieces of Web Services answers the gateway writes around what the
/// plans wrote in SQL: an item's error inside a 200 answer, and a zone's
/// dictionary with the sync token the gateway sealed.
public enum WebServicesWriter {
    /// One item's error inside a 200 answer: `{recordName | zoneID | …,
    /// reason, serverErrorCode, uuid}` (`key` and `value` name the item).
    public static func itemError(_ key: String, _ value: JSONValue, code: WebServicesCode, reason: String, requestID: String) -> JSONValue {
        .object([key: value, "serverErrorCode": .string(code.rawValue), "reason": .string(reason), "uuid": .string(requestID)])
    }

    /// A zone dictionary, `{"zoneID": …, "atomic": true, "syncToken": …}`,
    /// from the zone ID dictionary's JSON text (a plan wrote it) and the
    /// zone's sync token (nil: none, as `zones/modify` answers).
    public static func zone(zoneIDText: String, syncToken: String?) -> String {
        var text = "{\"zoneID\":" + zoneIDText + ",\"atomic\":true"
        if let syncToken {
            text += ",\"syncToken\":"
            JSONValue.string(syncToken).appendJSON(to: &text)
        }
        return text + "}"
    }
}
