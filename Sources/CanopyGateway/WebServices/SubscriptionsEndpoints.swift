import CanopyPlanner
import CanopyWebServices
import Foundation

/// `subscriptions/list|lookup|modify` onto Canopy's persistent push
/// subscriptions (API.md §14), and `tokens/register` onto `registerDevice`:
/// a zone subscription is a ZONE one, a query subscription a QUERY one
/// (zone-wide by default, as the reference says), its `filterBy` compiled
/// as `records/query` compiles it. A listed subscription's query gives its
/// record type and Canopy's predicate (`filter`), not the filter
/// dictionaries it was made from (docs/WEB_SERVICES.md).
enum SubscriptionsEndpoints {
    static let listDocument = """
        query WebServicesSubscriptions { subscriptions { subscriptionID kind scope zone { zoneName ownerName } recordType filter args firesOn } }
        """
    static let saveDocument = """
        mutation WebServicesSaveSubscription($id: String!, $kind: SubscriptionKind!, $scope: DatabaseScope, $zone: ZoneID, \
        $type: String, $filter: String, $args: JSON, $firesOn: [SubscriptionEvent!]) { saveSubscription(subscriptionID: $id, \
        kind: $kind, scope: $scope, zone: $zone, recordType: $type, filter: $filter, args: $args, firesOn: $firesOn) \
        { subscriptionID kind scope zone { zoneName ownerName } recordType filter args firesOn } }
        """
    static let deleteDocument = "mutation WebServicesDeleteSubscription($id: String!) { deleteSubscription(subscriptionID: $id) }"

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
        return .object(out)
    }

    /// The caller's subscriptions in this database.
    static func mine(_ call: WebServicesCall) async throws -> [JSONValue] {
        guard case .array(let all) = try await call.bridge.run(listDocument, [:]) else { return [] }
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
                    _ = try await call.bridge.run(deleteDocument, ["id": .string(id)])
                    out.append(.object(["subscriptionID": .string(id), "deleted": .bool(true)]))
                    continue
                }
                let saved = try await call.bridge.run(saveDocument, try variables(subscription, id: id, call: call, at: "operations[\(index)].subscription"))
                out.append(dictionary(saved, database: call.database))
            } catch {
                out.append(call.itemError("subscriptionID", .string(id), error: error))
            }
        }
        return ["subscriptions": .array(out)]
    }

    static func variables(_ subscription: [String: JSONValue], id: String, call: WebServicesCall, at place: String) throws -> [String: JSONValue] {
        var variables: [String: JSONValue] = ["id": .string(id), "scope": call.scope]
        switch subscription["subscriptionType"]?.stringValue {
        case "zone"?:
            variables["kind"] = .string("ZONE")
            variables["zone"] = try call.zone(subscription["zoneID"], at: "\(place).zoneID").input
        case "query"?:
            variables["kind"] = .string("QUERY")
            let query = try WebServicesQuery(subscription["query"])
            variables["type"] = .string(query.recordType)
            variables["filter"] = query.filter.map(JSONValue.string) ?? .null
            variables["args"] = query.args.isEmpty ? .null : .object(query.args)
            if subscription["zoneWide"] == .bool(false) || (subscription["zoneWide"] == nil && subscription["zoneID"].map { !$0.isNull } == true) {
                variables["zone"] = try call.zone(subscription["zoneID"], at: "\(place).zoneID").input
            }
            if case .array(let events)? = subscription["firesOn"] {
                var firesOn: [JSONValue] = []
                for event in events {
                    guard let name = event.stringValue, ["create", "update", "delete"].contains(name) else {
                        throw QueryError(.badRequest, "\(place).firesOn holds create, update and delete")
                    }
                    firesOn.append(.string(name.uppercased()))
                }
                variables["firesOn"] = .array(firesOn)
            }
            if subscription["firesOnce"] == .bool(true) {
                throw QueryError(.badRequest, "\(place): firesOnce subscriptions are not served by Canopy (docs/WEB_SERVICES.md)")
            }
        default:
            throw QueryError(.badRequest, "\(place).subscriptionType must be zone or query")
        }
        return variables
    }

    static let registerDocument = """
        mutation WebServicesRegisterDevice($token: String!, $environment: APNsEnvironment, $topic: String!) \
        { registerDevice(kind: APNS, apnsToken: $token, apnsEnvironment: $environment, apnsTopic: $topic) { deviceID } }
        """

    /// `tokens/register`: an APNs device token, onto `registerDevice`. The
    /// topic is the body's `apnsTopic`, or the container's identifier
    /// without `iCloud.` (its bundle ID, as CloudKit's containers are named).
    static func register(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .string(let token)? = call.body["apnsToken"] else { throw QueryError(.badRequest, "tokens/register needs apnsToken") }
        let environment: String
        switch call.body["apnsEnvironment"]?.stringValue {
        case "development"?: environment = "SANDBOX"
        case "production"?, nil: environment = "PRODUCTION"
        case let other?: throw QueryError(.badRequest, "apnsEnvironment must be development or production, not \(other.prefix(20))")
        }
        let topic = call.body["apnsTopic"]?.stringValue
            ?? (call.container.hasPrefix("iCloud.") ? String(call.container.dropFirst("iCloud.".count)) : call.container)
        _ = try await call.bridge.run(registerDocument, ["token": .string(token), "environment": .string(environment), "topic": .string(topic)])
        return ["apnsToken": .string(token), "apnsEnvironment": .string(environment == "SANDBOX" ? "development" : "production")]
    }
}
