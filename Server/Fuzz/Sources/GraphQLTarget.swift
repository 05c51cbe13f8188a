import CanopyPlanner
import Foundation

/// A `POST /graphql` body as the gateway reads it: the JSON, the document
/// and its variables parsed and validated against the schema, the query's
/// cost, and each root field's plan (which reads every argument and
/// variable, and writes the SQL). Mirrors GraphQLController and
/// OperationTable, which live in CanopyGateway.
struct GraphQLTarget: FuzzTarget {
    static let name = "graphql"
    static let secret = SigningKey(Data(repeating: 7, count: 32), retired: [Data(repeating: 8, count: 32)])
    static let schema: RecordSchema = ["hours": .int64, "note": .string, "endDate": .timestamp, "done": .boolean, "tags": .list(.string)]

    func run(_ bytes: UnsafeRawBufferPointer) {
        guard let (request, fields) = Self.parse(bytes) else { return }
        for field in fields {
            _ = try? Self.plan(field, request)
        }
    }

    /// The body read, the document parsed and validated, its root fields
    /// within the cost limit; nil wherever the gateway would refuse it.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> (ParsedRequest, [SelectedField])? {
        guard case .object(let body)? = try? JSONValue(parsing: bytes), case .string(let query)? = body["query"] else { return nil }
        var variables: [String: JSONValue] = [:]
        switch body["variables"] {
        case .object(let given)?: variables = given
        case nil, .null?: break
        default: return nil
        }
        var operationName: String?
        switch body["operationName"] {
        case .string(let name)?: operationName = name
        case nil, .null?: break
        default: return nil
        }
        guard let request = try? ParsedRequest(query: query, variables: variables, operationName: operationName),
              let fields = try? request.rootFields() else { return nil }
        guard (try? QueryCost.check(fields, in: request, maximum: 50_000)) != nil else { return nil }
        return (request, fields)
    }

    /// The plan OperationTable would make for the field.
    static func plan(_ field: SelectedField, _ request: ParsedRequest) throws -> Any? {
        switch field.name {
        case "me": return try MePlan(field)
        case "zones": return try ZonesPlan(field, request: request)
        case "lookup":
            // The plan cache's template (issue 51), replayed with the request's
            // own values, is the statement planned without recording.
            let checked = try LookupPlan.check(field, request: request)
            let recorded = try LookupPlan(checked, field: field, request: request, recording: true)
            let replayed = try LookupPlan(checked, template: recorded.template!)
            precondition(replayed.statement == recorded.statement, "lookup template replay differs")
            return recorded.statement
        case "records":
            let checked = try RecordsPlan.check(field, request: request, schema: schema, secret: secret)
            let recorded = try RecordsPlan(checked, field: field, request: request, secret: secret, recording: true)
            let replayed = try RecordsPlan(checked, field: field, secret: secret, template: recorded.template!)
            precondition(replayed.statement == recorded.statement, "records template replay differs")
            let plain = try RecordsPlan(field, request: request, schema: schema, secret: secret)
            precondition(recorded.statement == plain.statement, "recording changed the statement")
            return recorded.statement
        case "zoneChanges": return try ZoneChangesPlan(field, request: request, userID: 1, secret: secret)
        case "zoneRanges": return try ZoneRangesPlan(field, request: request, userID: 1)
        case "databaseChanges": return try DatabaseChangesPlan(field, request: request, userID: 1, secret: secret)
        case "share": return try SharePlan(field, request: request)
        case "shareMetadata": return try ShareMetadataPlan(field, request: request)
        case "discoverUser": return try DiscoverUserPlan(field, request: request)
        case "recordTypes": return try RecordTypesPlan(field, request: request)
        case "saveZone": return try SaveZonePlan(field, request: request)
        case "deleteZone": return try DeleteZonePlan(field, request: request)
        case "modifyRecords": return try ModifyRecordsPlan(field, request: request)
        case "acceptShare": return try ShareMetadataPlan(field, request: request)
        case "saveShare", "setParticipant", "removeParticipant", "deleteShare", "leaveShare":
            return try ShareMutationPlan(field, request: request)
        case "revokeToken": return try RevokeTokenPlan(field, request: request)
        default: return nil
        }
    }
}
