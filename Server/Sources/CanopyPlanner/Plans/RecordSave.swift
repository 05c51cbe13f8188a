/// One record to save, as a door asks for it: what GraphQL's `RecordInput`
/// and Web Services' save operations both become (issue 66: no
/// door-shaped dictionary reaches the planner). ``ModifyRecordsPlan``
/// checks it once (names, fields, parent, size) and hands it to
/// `canopy.modify_records` as the JSON that function reads (``json``).
public struct RecordSave: Sendable, Equatable {
    public var recordName: String
    public var recordType: String
    public var fields: [String: JSONValue]
    /// The tag last seen; nil to create (or to overwrite, by policy).
    public var recordChangeTag: String?
    /// The parent's recordName, in the same zone.
    public var parent: String?
    /// This record's save policy, over the batch's (Web Services' operation
    /// types; GraphQL's `RecordInput.savePolicy`).
    public var savePolicy: ModifyRecordsPlan.SavePolicy?

    public init(
        recordName: String, recordType: String, fields: [String: JSONValue], recordChangeTag: String? = nil, parent: String? = nil,
        savePolicy: ModifyRecordsPlan.SavePolicy? = nil
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
        self.recordChangeTag = recordChangeTag
        self.parent = parent
        self.savePolicy = savePolicy
    }

    /// A save read from a door: the save, or why it cannot be one (a
    /// per-record refusal; the rest of the batch still runs).
    public enum Reading: Sendable, Equatable {
        case save(RecordSave)
        case refused(recordName: String, message: String)
    }

    /// GraphQL's `RecordInput` (`{recordName, recordType, fields,
    /// recordChangeTag?, parent?, savePolicy?}`), read for its shape; the
    /// plan checks the rest. Without a recordName the whole request is
    /// refused, as no record can be named in its answer.
    public static func read(_ input: JSONValue) throws(QueryError) -> Reading {
        guard case .object(let record) = input, case .string(let name)? = record["recordName"] else {
            throw QueryError(.invalidArguments, "each save needs recordName, recordType and fields")
        }
        guard case .string(let type)? = record["recordType"] else {
            return .refused(recordName: name, message: "record \(name): recordType must be a letter followed by letters, digits or _")
        }
        guard case .object(let fields)? = record["fields"] else {
            return .refused(recordName: name, message: "record \(name): fields must be a JSON object")
        }
        var parent: String?
        switch record["parent"] {
        case nil, .null?: break
        case .string(let parentName)?: parent = parentName
        default: return .refused(recordName: name, message: "record \(name): parent must be a recordName")
        }
        var tag: String?
        switch record["recordChangeTag"] {
        case nil, .null?: break
        case .string(let text)?: tag = text
        default: return .refused(recordName: name, message: "record \(name): recordChangeTag must be a string")
        }
        return .save(RecordSave(
            recordName: name, recordType: type, fields: fields, recordChangeTag: tag, parent: parent,
            savePolicy: record["savePolicy"]?.stringValue.flatMap(ModifyRecordsPlan.SavePolicy.init(rawValue:))
        ))
    }

    /// The JSON `canopy.modify_records` reads (sql/functions/modify_records.sql).
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "recordName": .string(recordName), "recordType": .string(recordType), "fields": .object(fields),
        ]
        if let recordChangeTag { object["recordChangeTag"] = .string(recordChangeTag) }
        if let parent { object["parent"] = .string(parent) }
        if let savePolicy { object["savePolicy"] = .string(savePolicy.rawValue) }
        return .object(object)
    }
}
