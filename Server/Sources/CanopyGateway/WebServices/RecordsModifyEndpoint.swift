import CanopyPlanner
import CanopyWebServices
import Foundation

/// `records/modify`: the reference's operations as one `modifyRecords`
/// batch, each save with its own save policy:
///
/// | operationType | Canopy |
/// |---|---|
/// | `create` | saved without a tag: a record already there is `EXISTS` |
/// | `update` | `IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS`: tag checked, given keys merged |
/// | `forceUpdate` | `CHANGED_KEYS` |
/// | `replace` | `IF_SERVER_RECORD_UNCHANGED`: tag checked, fields not given removed |
/// | `forceReplace` | `ALL_KEYS` |
/// | `delete` | `deleteIfUnchanged`: deleted only at its tag, else `CONFLICT` |
/// | `forceDelete` | `delete` |
///
/// One statement writes the whole batch, so `atomic` is Canopy's: all or
/// nothing. A record whose type the operation does not say (the
/// reference's `update` sends none) has it looked up first, in the same
/// zone, as the caller.
enum RecordsModifyEndpoint {

    /// One operation of the request, read (CanopyWebServices).
    typealias Operation = WebServicesRecordOperation

    static func modify(_ call: WebServicesCall) async throws -> WebServicesBody {
        let zone = try call.zone(call.body["zoneID"])
        guard case .array(let items)? = call.body["operations"], !items.isEmpty else {
            throw QueryError(.badRequest, "records/modify needs operations, a list of {\"operationType\": …, \"record\": {…}}")
        }
        guard items.count <= ModifyRecordsPlan.maximumItems else {
            throw QueryError(.limitExceeded, "records/modify takes at most \(ModifyRecordsPlan.maximumItems) operations, got \(items.count)")
        }
        let atomic: Bool
        switch call.body["atomic"] {
        case nil, .null?: atomic = true
        case .bool(let flag)?: atomic = flag
        case let other?: throw QueryError(.badRequest, "atomic must be true or false, not \(other.typeName)")
        }
        // Share records (cloudkit.share) go to the sharing plans, one by one
        // after the batch; every other operation is one batch.
        var shareAnswers: [Int: String] = [:]
        var recordItems: [(index: Int, item: JSONValue)] = []
        for (index, item) in items.enumerated() {
            if case .object(let operation) = item, case .object(let record)? = operation["record"],
               WebServicesShareRecord.isShare(recordType: record["recordType"]?.stringValue, recordName: record["recordName"]?.stringValue ?? "") {
                shareAnswers[index] = "null"
            } else {
                recordItems.append((index, item))
            }
        }
        var operations = try recordItems.map { entry throws(QueryError) in
            try Operation(entry.item, at: entry.index) { UUID().uuidString }
        }
        let answered = try await answer(call, operations: &operations, zone: zone, atomic: atomic)
        for index in shareAnswers.keys.sorted() {
            shareAnswers[index] = await WebServicesShares.modify(call, operation: items[index], zone: zone)
        }
        // Each operation's answer in the order asked: the records as the
        // plans wrote them.
        var out: [String] = []
        var recordAnswers = answered[...]
        for index in items.indices {
            if let share = shareAnswers[index] { out.append(share) } else if let next = recordAnswers.popFirst() { out.append(next) }
        }
        return WebServicesBody(text: "{\"records\":" + "[" + out.joined(separator: ",") + "]" + "}")
    }

    /// The record operations run as one batch: each one's answer, in order.
    static func answer(
        _ call: WebServicesCall, operations: inout [Operation], zone: WebServicesCall.Zone, atomic: Bool
    ) async throws -> [String] {
        if operations.isEmpty { return [] }

        // Types the operations leave out, from the records themselves.
        let untyped = operations.filter { !$0.isDelete && $0.recordType == nil && $0.refusal == nil }.map(\.recordName)
        if !untyped.isEmpty {
            let statement = try LookupPlan.recordTypes(zone: try zone.reference, names: untyped)
            let found = try await call.runner.read(statement) { rows in try rows.map { try $0.decode((String, String).self) } }
            let types = Dictionary(found, uniquingKeysWith: { first, _ in first })
            for index in operations.indices where !operations[index].isDelete && operations[index].recordType == nil && operations[index].refusal == nil {
                if let type = types[operations[index].recordName] {
                    operations[index].recordType = type
                } else if operations[index].type == .update || operations[index].type == .replace {
                    operations[index].refusal = (.notFound, "record \(operations[index].recordName) does not exist")
                } else {
                    operations[index].refusal = (.badRequest, "record \(operations[index].recordName) does not exist: give its recordType to create it")
                }
            }
        }

        // Field values in Canopy's form, typed by the schemas where JSON cannot say.
        let schemas = try await call.schemas(of: Set(operations.compactMap(\.recordType)))
        var saves: [RecordSave] = []
        var deletes: [String] = []
        var versions: [(name: String, tag: String)] = []
        for index in operations.indices where operations[index].refusal == nil {
            let operation = operations[index]
            if operation.isDelete {
                if operation.type == .delete {
                    guard let tag = operation.tag else {
                        operations[index].refusal = (.badRequest, "record \(operation.recordName): delete needs the record's recordChangeTag (forceDelete does not)")
                        continue
                    }
                    versions.append((operation.recordName, tag))
                } else {
                    deletes.append(operation.recordName)
                }
                continue
            }
            if operation.tag == nil && (operation.type == .update || operation.type == .replace) {
                let type = operation.type.rawValue
                operations[index].refusal = (.badRequest, "record \(operation.recordName): \(type) needs the record's recordChangeTag (force\(type.prefix(1).uppercased())\(type.dropFirst()) does not)")
                continue
            }
            let schema = operation.recordType.flatMap { schemas[$0] }
            var fields: [String: JSONValue] = [:]
            do throws(QueryError) {
                for (name, field) in operation.fields {
                    guard Names.isFieldName(name) else {
                        throw QueryError(.badRequest, "field name '\(name.prefix(60))' must be a letter followed by letters, digits or _")
                    }
                    fields[name] = try WebServicesFieldValue.canopyValue(field, name: name, existing: schema?[name])
                }
            } catch {
                operations[index].refusal = (.badRequest, "record \(operation.recordName): \(error.message)")
                continue
            }
            saves.append(RecordSave(
                recordName: operation.recordName, recordType: operation.recordType ?? "", fields: fields,
                recordChangeTag: operation.type == .update || operation.type == .replace ? operation.tag : nil,
                parent: operation.parent, savePolicy: operation.savePolicy
            ))
        }

        let refused = operations.contains { $0.refusal != nil }
        if refused && atomic {
            // Nothing runs: the refused say why, the others that they were not tried.
            return operations.map { operation in
                let (code, reason) = operation.refusal ?? (.atomicError, "record \(operation.recordName) was not saved because another operation in the atomic batch failed")
                return call.itemError("recordName", .string(operation.recordName), code: code, reason: reason).jsonText
            }
        }

        var saved: [String: String] = [:]
        var deleted = Set<String>()
        var failures: [String: (code: ErrorCode, message: String)] = [:]
        if !saves.isEmpty || !deletes.isEmpty || !versions.isEmpty {
            // The batch as the planner's typed input; the saved records come
            // back written by the plan as CloudKit's dictionaries.
            var style = try call.recordStyle(zone: zone)
            var ownKeys = RecordsEndpoints.KeysGroups()
            for operation in operations where operation.refusal == nil && !operation.isDelete {
                if let keys = operation.desiredKeys { ownKeys.add(operation.recordName, keys: keys) }
            }
            style.desiredKeysByRecord = ownKeys.groups
            let plan = try ModifyRecordsPlan(
                zone: try zone.reference, saves: saves, deletes: deletes, deleteIfUnchanged: versions, atomic: atomic,
                policy: .ifServerRecordUnchanged, style: style
            )
            let (outcome, records) = try await call.runner.modify(
                plan, requestID: call.requestID, zoneMissing: QueryError(.zoneNotFound, "the zone does not exist")
            ) { outcome, records in (outcome, records) }
            for id in outcome.saved {
                if let record = records[id], let text = record.saved { saved[record.name] = text }
            }
            deleted = Set(outcome.deleted)
            for failure in outcome.failures { failures[failure.recordName] = (failure.code, failure.message) }
        }
        return operations.map { operation in
            let name = JSONValue.string(operation.recordName)
            if let (code, reason) = operation.refusal {
                return call.itemError("recordName", name, code: code, reason: reason).jsonText
            }
            if let failure = failures[operation.recordName] {
                var code = WebServicesCode(failure.code)
                if failure.code == .serverRecordChanged && operation.type == .create { code = .exists }
                return call.itemError("recordName", name, code: code, reason: failure.message).jsonText
            }
            if operation.isDelete {
                return deleted.contains(operation.recordName)
                    ? JSONValue.object(["recordName": name, "deleted": .bool(true), "zoneID": zone.dictionary]).jsonText
                    : call.itemError("recordName", name, code: .internalError, reason: "record \(operation.recordName) was neither deleted nor refused").jsonText
            }
            return saved[operation.recordName]
                ?? call.itemError("recordName", name, code: .internalError, reason: "record \(operation.recordName) was neither saved nor refused").jsonText
        }
    }
}
