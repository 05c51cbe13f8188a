import CanopyPlanner
import CanopyWebServices
import Foundation

/// `subscriptions/list|lookup|modify` onto Canopy's persistent push
/// subscriptions (docs/API.md §14), and `tokens/register` onto `registerDevice`:
/// a zone subscription is a ZONE one, a query subscription a QUERY one
/// (zone-wide by default, as the reference says), its `filterBy` compiled
/// as `records/query` compiles it. A listed subscription's query gives its
/// record type and Canopy's predicate (`filter`), not the filter
/// dictionaries it was made from (docs/WEB_SERVICES.md).
enum SubscriptionsEndpoints {
    /// Canopy's subscription as the reference's subscription dictionary.
    static func dictionary(_ value: JSONValue, database: String) -> JSONValue {
        guard case .object(let subscription) = value else { return value }
        let kind = subscription["kind"]?.stringValue
        var out: [String: JSONValue] = [
            "subscriptionID": subscription["subscriptionID"] ?? .null,
            "subscriptionType": .string(kind == "QUERY" ? "query" : kind == "ZONE" ? "zone" : "database"),
        ]
        if case .object(let zone)? = subscription["zone"], case .string(let name)? = zone["zoneName"] {
            out["zoneID"] = WebServicesCall.zoneID(zoneName: name, owner: zone["ownerName"]?.stringValue, database: database)
        }
        if kind == "QUERY" {
            var query: [String: JSONValue] = ["recordType": subscription["recordType"] ?? .null]
            if let filter = subscription["filter"], !filter.isNull { query["filter"] = filter }
            out["query"] = .object(query)
            out["zoneWide"] = .bool(subscription["zone"]?.isNull ?? true)
            if case .array(let events)? = subscription["firesOn"] {
                out["firesOn"] = .array(events.compactMap { $0.stringValue.map { .string($0.lowercased()) } })
            }
            out["firesOnce"] = .bool(false)
        }
        if let info = subscription["notificationInfo"], !info.isNull { out["notificationInfo"] = info }
        return .object(out)
    }

    /// The caller's subscriptions in this database.
    static func mine(_ call: WebServicesCall) async throws -> [JSONValue] {
        let text = try await call.runner.read(SubscriptionsPlan.typedStatement) { rows in try rows.first.map { try $0.decode(String?.self) } ?? nil }
        guard case .array(let all) = try JSONValue(parsing: text ?? "[]") else { return [] }
        let scope = call.scope
        return all.filter { item in
            if case .object(let subscription) = item { return call.database.isEmpty || subscription["scope"] == scope }
            return false
        }.map { dictionary($0, database: call.database) }
    }

    static func list(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        ["subscriptions": .array(try await mine(call))]
    }

    static func lookup(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .array(let asked)? = call.body["subscriptions"], !asked.isEmpty else {
            throw QueryError(.badRequest, "subscriptions/lookup needs subscriptions, a list of {\"subscriptionID\": …}")
        }
        var byID: [String: JSONValue] = [:]
        for case .object(let subscription) in try await mine(call) {
            if let id = subscription["subscriptionID"]?.stringValue { byID[id] = .object(subscription) }
        }
        return ["subscriptions": .array(asked.map { item in
            let id = (item.objectValue?["subscriptionID"]?.stringValue) ?? ""
            return byID[id] ?? call.itemError("subscriptionID", .string(id), code: .notFound, reason: "you have no subscription \(id.prefix(80))")
        })]
    }

    static func modify(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .array(let operations)? = call.body["operations"], !operations.isEmpty else {
            throw QueryError(.badRequest, "subscriptions/modify needs operations, a list of {\"operationType\": \"create\" | \"update\" | \"delete\", \"subscription\": {…}}")
        }
        var out: [JSONValue] = []
        for (index, item) in operations.enumerated() {
            guard case .object(let operation) = item, case .string(let type)? = operation["operationType"], ["create", "update", "delete"].contains(type),
                  case .object(let subscription)? = operation["subscription"] else {
                throw QueryError(.badRequest, "operations[\(index)] needs operationType (create, update or delete) and a subscription dictionary")
            }
            let id = subscription["subscriptionID"]?.stringValue ?? UUID().uuidString
            do {
                if type == "delete" {
                    let plan = DeleteSubscriptionPlan(subscriptionID: id)
                    let count = try await call.runner.write(plan.statement) { rows in try rows.first.map(DeleteSubscriptionPlan.decode) }
                    _ = try plan.answer(count)
                    out.append(.object(["subscriptionID": .string(id), "deleted": .bool(true)]))
                    continue
                }
                let input = try typedInput(subscription, at: "operations[\(index)].subscription", call: call)
                let make = { (schema: RecordSchema?) throws -> SaveSubscriptionPlan in
                    try SaveSubscriptionPlan(subscriptionID: id, kind: input.kind, scope: call.databaseScope, zone: input.zone,
                                             query: input.query, firesOn: input.firesOn, notificationInfo: input.notificationInfo, schema: schema)
                }
                let plan: SaveSubscriptionPlan
                if let query = input.query {
                    // A query's filter is checked against its record type's schema, read (cached) first.
                    plan = try await call.recordSchemas.planning(query.recordType, logger: call.logger) { try make($0) }
                } else {
                    plan = try make(nil)
                }
                let saved = try await call.runner.write(plan.statement) { rows in try rows.first.map(JSONRow.decode) }
                guard let text = try plan.answer(saved) else { throw QueryError(.internalError, "the subscription was not saved") }
                out.append(dictionary(try JSONValue(parsing: text), database: call.database))
            } catch {
                out.append(call.itemError("subscriptionID", .string(id), error: error))
            }
        }
        return ["subscriptions": .array(out)]
    }

    /// A subscription dictionary in the planner's terms: its kind, zone,
    /// query (the filter dictionaries as Canopy's predicate, which the
    /// subscription stores) and events.
    static func typedInput(
        _ subscription: [String: JSONValue], at place: String, call: WebServicesCall
    ) throws -> (kind: PushSubscriptionKind, zone: ZoneReference?, query: PushQuery?, firesOn: [String]?, notificationInfo: JSONValue?) {
        let info = try WebServicesNotificationInfo.read(subscription["notificationInfo"], at: "\(place).notificationInfo")
        switch subscription["subscriptionType"]?.stringValue {
        case "zone"?:
            return (.zone, try call.zone(subscription["zoneID"], at: "\(place).zoneID").reference, nil, nil, info)
        case "query"?:
            let query = try WebServicesQuery(subscription["query"])
            var zone: ZoneReference?
            if subscription["zoneWide"] == .bool(false) || (subscription["zoneWide"] == nil && subscription["zoneID"].map { !$0.isNull } == true) {
                zone = try call.zone(subscription["zoneID"], at: "\(place).zoneID").reference
            }
            var firesOn: [String]?
            if case .array(let events)? = subscription["firesOn"] {
                firesOn = []
                for event in events {
                    guard let name = event.stringValue, ["create", "update", "delete"].contains(name) else {
                        throw QueryError(.badRequest, "\(place).firesOn holds create, update and delete")
                    }
                    firesOn?.append(name.uppercased())
                }
            }
            if subscription["firesOnce"] == .bool(true) {
                throw QueryError(.badRequest, "\(place): firesOnce subscriptions are not served by Canopy (docs/WEB_SERVICES.md)")
            }
            let pushQuery = PushQuery(recordType: query.recordType, filter: try query.storableFilter(at: "\(place).query"),
                                      args: query.args.isEmpty ? nil : .object(query.args))
            return (.query, zone, pushQuery, firesOn, info)
        default:
            throw QueryError(.badRequest, "\(place).subscriptionType must be zone or query")
        }
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
