import CanopyPlanner

/// One operation of `subscriptions/modify`: what to do and to which
/// subscription ID. Its subscription dictionary is read on its own
/// (``subscription(scope:)``), so a wrong one is that operation's error
/// beside the others' results, as the reference answers per operation.
public struct WebServicesSubscriptionRequest: Sendable {
    public enum Action: String, Sendable {
        case create, update, delete
    }

    public var action: Action
    /// The request's `subscriptionID`, or `newID()` when it has none.
    public var subscriptionID: String
    let dictionary: [String: JSONValue]
    let place: String

    /// `operations[index]`: refused whole when it is not an operation at all.
    public init(operation item: JSONValue, at place: String, newID: () -> String) throws(QueryError) {
        guard case .object(let operation) = item, case .string(let type)? = operation["operationType"], let action = Action(rawValue: type),
              case .object(let subscription)? = operation["subscription"] else {
            throw QueryError(.badRequest, "\(place) needs operationType (create, update or delete) and a subscription dictionary")
        }
        self.action = action
        self.dictionary = subscription
        self.place = "\(place).subscription"
        switch subscription["subscriptionID"] {
        case nil, .null?: subscriptionID = newID()
        case .string(let id)?: subscriptionID = id
        case let other?: throw QueryError(.badRequest, "\(place).subscription.subscriptionID must be a string, not \(other.typeName)")
        }
    }

    /// The subscription to create or update, in a request to `scope`'s database.
    public func subscription(scope: DatabaseScope) throws(QueryError) -> WebServicesSubscription {
        try WebServicesSubscription(dictionary, at: place, scope: scope)
    }
}

/// A subscription dictionary in the planner's terms: its kind, zone, query
/// (the filter dictionaries as Canopy's predicate, which the subscription
/// stores), events and Notification Info Dictionary. Every refusal names
/// where in the request it is.
public struct WebServicesSubscription: Sendable {
    public var kind: PushSubscriptionKind = .zone
    public var zone: ZoneReference?
    public var query: PushQuery?
    /// `CREATE`, `UPDATE` and `DELETE` as the planner names them; nil: all.
    public var firesOn: [String]?
    public var notificationInfo: JSONValue?

    public init(_ subscription: [String: JSONValue], at place: String, scope: DatabaseScope) throws(QueryError) {
        try read(subscription, at: place, scope: scope)
    }

    private mutating func read(_ subscription: [String: JSONValue], at place: String, scope: DatabaseScope) throws(QueryError) {
        notificationInfo = try WebServicesNotificationInfo.read(subscription["notificationInfo"], at: "\(place).notificationInfo")
        switch subscription["subscriptionType"] {
        case .string("zone")?:
            kind = .zone
            zone = try WebServicesZoneID.read(subscription["zoneID"], at: "\(place).zoneID", scope: scope).reference
        case .string("query")?:
            kind = .query
            let query = try WebServicesQuery(subscription["query"])
            // Zone-wide unless it names a zone (and does not say zoneWide: true).
            let namesZone = subscription["zoneID"].map { !$0.isNull } ?? false
            let zoneWide: Bool
            switch subscription["zoneWide"] {
            case nil, .null?: zoneWide = !namesZone
            case .bool(let flag)?: zoneWide = flag
            case let other?: throw QueryError(.badRequest, "\(place).zoneWide must be true or false, not \(other.typeName)")
            }
            if !zoneWide {
                zone = try WebServicesZoneID.read(subscription["zoneID"], at: "\(place).zoneID", scope: scope).reference
            }
            switch subscription["firesOn"] {
            case nil, .null?: break
            case .array(let events)?:
                var names: [String] = []
                for event in events {
                    guard case .string(let name) = event, ["create", "update", "delete"].contains(name) else {
                        throw QueryError(.badRequest, "\(place).firesOn holds create, update and delete")
                    }
                    names.append(name.uppercased())
                }
                firesOn = names
            case let other?: throw QueryError(.badRequest, "\(place).firesOn must be a list of create, update and delete, not \(other.typeName)")
            }
            if subscription["firesOnce"] == .bool(true) {
                throw QueryError(.badRequest, "\(place): firesOnce subscriptions are not served by Canopy (docs/WEB_SERVICES.md)")
            }
            self.query = PushQuery(recordType: query.recordType, filter: try query.storableFilter(at: "\(place).query"),
                                   args: query.args.isEmpty ? nil : .object(query.args))
        default:
            throw QueryError(.badRequest, "\(place).subscriptionType must be zone or query")
        }
    }
}
