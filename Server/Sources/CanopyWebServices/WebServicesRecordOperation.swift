import CanopyPlanner

/// One operation of `records/modify`, read: its type (each a save policy
/// of Canopy's, or a delete), the record's name, type, tag, fields and
/// parent, and its own `desiredKeys`. What is wrong with one record is its
/// ``refusal`` (that operation's `BAD_REQUEST` in the answer); what is
/// wrong with the request's shape is thrown, naming where.
public struct WebServicesRecordOperation: Sendable {
    /// The reference's seven operation types.
    public enum OperationType: String, Sendable, CaseIterable {
        case create, update, forceUpdate, replace, forceReplace, delete, forceDelete
    }

    public var type: OperationType
    public var recordName: String
    public var recordType: String?
    public var tag: String?
    public var fields: [String: JSONValue] = [:]
    public var parent: String?
    /// The operation's own `desiredKeys`, which replace the request's for
    /// its record's answer (nil: the request's; `.some(nil)`: every field).
    public var desiredKeys: [String]??
    /// Why it cannot run, found before the batch does (BAD_REQUEST).
    public var refusal: (code: WebServicesCode, reason: String)?

    public var isDelete: Bool { type == .delete || type == .forceDelete }

    /// How Canopy saves it.
    public var savePolicy: ModifyRecordsPlan.SavePolicy {
        switch type {
        case .update: return .ifServerRecordUnchangedChangedKeys
        case .forceUpdate: return .changedKeys
        case .forceReplace: return .allKeys
        default: return .ifServerRecordUnchanged
        }
    }

    /// `operations[index]`; a `create` without a `recordName` gets `newName()`.
    public init(_ item: JSONValue, at index: Int, newName: () -> String) throws(QueryError) {
        let place = "operations[\(index)]"
        guard case .object(let dictionary) = item else { throw QueryError(.badRequest, "\(place) must be an operation dictionary") }
        guard case .string(let typeName)? = dictionary["operationType"], let type = OperationType(rawValue: typeName) else {
            throw QueryError(.badRequest, "\(place).operationType must be create, update, forceUpdate, replace, forceReplace, delete or forceDelete")
        }
        guard case .object(let record)? = dictionary["record"] else { throw QueryError(.badRequest, "\(place) needs a record dictionary") }
        switch record["recordName"] {
        case .string(let name)?: recordName = name
        case nil where type == .create, .null? where type == .create: recordName = newName()
        default: throw QueryError(.badRequest, "\(place).record needs a recordName")
        }
        self.type = type
        if let keys = dictionary["desiredKeys"] {
            do {
                desiredKeys = .some(try WebServicesRequestBody.desiredKeys(keys))
            } catch {
                throw QueryError(.badRequest, "\(place).desiredKeys: \(error.message)")
            }
        }
        recordType = try WebServicesRequestBody.string(record["recordType"], at: "\(place).record.recordType")
        // update, replace and the force forms of an existing record may leave it out; create may not.
        if recordType == nil && type == .create { refusal = (.badRequest, "record \(recordName): create needs a recordType") }
        tag = try WebServicesRequestBody.string(record["recordChangeTag"], at: "\(place).record.recordChangeTag")
        switch record["fields"] {
        case nil, .null?: break
        case .object(let given)?: fields = given
        case let other?: throw QueryError(.badRequest, "\(place).record.fields must be a dictionary of fields, not \(other.typeName)")
        }
        switch record["parent"] {
        case nil, .null?: break
        case .object(let given)?:
            guard case .string(let name)? = given["recordName"] else { throw QueryError(.badRequest, "\(place).record.parent needs a recordName") }
            parent = name
        case let other?: throw QueryError(.badRequest, "\(place).record.parent must be {\"recordName\": …}, not \(other.typeName)")
        }
    }
}
