import CanopyPlanner
import CanopyWebServices
import Foundation

/// `subscriptions/list|lookup|modify` onto Canopy's persistent push
/// subscriptions (docs/API.md §14), and `tokens/register` onto `registerDevice`:
/// a zone subscription is a ZONE one, a query subscription a QUERY one
/// (zone-wide by default, as the reference says), its `filterBy` compiled
/// as `records/query` compiles it (``WebServicesSubscriptionRequest``). The
/// plans write the reference's subscription dictionaries in SQL
/// (`Projection.cloudKitSubscription`); a listed subscription's query gives
/// its record type and Canopy's predicate (`filter`), not the filter
/// dictionaries it was made from (docs/WEB_SERVICES.md).
enum SubscriptionsEndpoints {
    /// The database the path names; nil for `subscriptions/lookup` without
    /// one, which finds the caller's subscriptions in every database.
    static func scope(_ call: WebServicesCall) -> DatabaseScope? {
        call.database.isEmpty ? nil : call.databaseScope
    }

    static func list(_ call: WebServicesCall) async throws -> WebServicesBody {
        let statement = SubscriptionsPlan.cloudKitStatement(scope: scope(call))
        let list = try await call.runner.read(statement) { rows in try rows.first.map { try $0.decode(String?.self) } ?? nil }
        return WebServicesBody(text: "{\"subscriptions\":" + (list ?? "[]") + "}")
    }

    /// Each subscription asked for, in order: its dictionary, or NOT_FOUND
    /// in its place (both written by the plan).
    static func lookup(_ call: WebServicesCall) async throws -> WebServicesBody {
        guard case .array(let asked)? = call.body["subscriptions"], !asked.isEmpty else {
            throw QueryError(.badRequest, "subscriptions/lookup needs subscriptions, a list of {\"subscriptionID\": …}")
        }
        let ids = try asked.enumerated().map { index, item throws(QueryError) in
            guard case .object(let subscription) = item, case .string(let id)? = subscription["subscriptionID"] else {
                throw QueryError(.badRequest, "subscriptions[\(index)] needs a subscriptionID")
            }
            return id
        }
        let statement = SubscriptionsPlan.cloudKitLookup(scope: scope(call), ids: ids, missingCode: WebServicesCode.notFound.rawValue,
                                                         requestID: call.requestID)
        let found = try await call.runner.read(statement) { rows in try rows.first.map { try $0.decode(String?.self) } ?? nil }
        return WebServicesBody(text: "{\"subscriptions\":" + (found ?? "[]") + "}")
    }

    static func modify(_ call: WebServicesCall) async throws -> WebServicesBody {
        guard case .array(let items)? = call.body["operations"], !items.isEmpty else {
            throw QueryError(.badRequest, "subscriptions/modify needs operations, a list of {\"operationType\": \"create\" | \"update\" | \"delete\", \"subscription\": {…}}")
        }
        // Every operation read before any runs: one that is not an
        // operation refuses the request; a wrong subscription dictionary is
        // its operation's error, beside the others' results.
        let operations = try items.enumerated().map { index, item throws(QueryError) in
            try WebServicesSubscriptionRequest(operation: item, at: "operations[\(index)]") { UUID().uuidString }
        }
        var out: [String] = []
        for operation in operations {
            let id = operation.subscriptionID
            do {
                if operation.action == .delete {
                    let plan = DeleteSubscriptionPlan(subscriptionID: id)
                    let count = try await call.runner.write(plan.statement) { rows in try rows.first.map(DeleteSubscriptionPlan.decode) }
                    _ = try plan.answer(count)
                    out.append(JSONValue.object(["subscriptionID": .string(id), "deleted": .bool(true)]).jsonText)
                    continue
                }
                let subscription = try operation.subscription(scope: call.databaseScope)
                let make = { (schema: RecordSchema?) throws -> SaveSubscriptionPlan in
                    try SaveSubscriptionPlan(subscriptionID: id, kind: subscription.kind, scope: call.databaseScope, zone: subscription.zone,
                                             query: subscription.query, firesOn: subscription.firesOn, notificationInfo: subscription.notificationInfo,
                                             schema: schema)
                }
                let plan: SaveSubscriptionPlan
                if let query = subscription.query {
                    // A query's filter is checked against its record type's schema, read (cached) first.
                    plan = try await call.recordSchemas.planning(query.recordType, logger: call.logger) { try make($0) }
                } else {
                    plan = try make(nil)
                }
                let saved = try await call.runner.write(plan.statement) { rows in try rows.first.map(JSONRow.decode) }
                guard let text = try plan.answer(saved) else { throw QueryError(.internalError, "the subscription was not saved") }
                out.append(text)
            } catch {
                out.append(call.itemError("subscriptionID", .string(id), error: error).jsonText)
            }
        }
        return WebServicesBody(text: "{\"subscriptions\":[" + out.joined(separator: ",") + "]}")
    }

    /// `tokens/register`: an APNs device token, onto `registerDevice`. The
    /// topic is the body's `apnsTopic`, or the container's identifier
    /// without `iCloud.` (its bundle ID, as CloudKit's containers are named).
    static func register(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .string(let token)? = call.body["apnsToken"] else { throw QueryError(.badRequest, "tokens/register needs apnsToken") }
        // A token tokens/create made: the caller's web courier, registered already.
        if try await WebServicesCourier.isCallersCourier(call, token: token) {
            return ["apnsToken": .string(token), "apnsEnvironment": call.body["apnsEnvironment"] ?? .string("production")]
        }
        let environment: String
        switch call.body["apnsEnvironment"]?.stringValue {
        case "development"?: environment = "SANDBOX"
        case "production"?, nil: environment = "PRODUCTION"
        case let other?: throw QueryError(.badRequest, "apnsEnvironment must be development or production, not \(other.prefix(20))")
        }
        let topic = call.body["apnsTopic"]?.stringValue
            ?? (call.container.hasPrefix("iCloud.") ? String(call.container.dropFirst("iCloud.".count)) : call.container)
        let statement = try RegisterDevicePlan.apnsStatement(token: token, environment: environment, topic: topic)
        _ = try await call.runner.write(statement) { rows in rows.count }
        return ["apnsToken": .string(token), "apnsEnvironment": .string(environment == "SANDBOX" ? "development" : "production")]
    }
}
