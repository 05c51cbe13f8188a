import PostgresNIO

/// What a QUERY subscription watches, checked the way `records` checks a
/// filter: when it is saved (so a bad one is refused with where it was
/// wrong) and again at each delivery, against the schema of that moment.
public struct PushQuery: Sendable, Equatable {
    public let recordType: String
    public let filter: String?
    public let args: JSONValue?

    public init(recordType: String, filter: String?, args: JSONValue?) {
        self.recordType = recordType
        self.filter = filter
        self.args = args
    }

    public func predicate(schema: RecordSchema) throws -> CheckedPredicate {
        let checker = PredicateChecker(schema: schema, recordType: recordType, args: args)
        return try checker.check(try filter.map(PredicateParser.parse) ?? .all)
    }
}

/// What a subscription watches: every zone of its scope, one zone, or the
/// records of one type matching a filter (CloudKit's database, zone and
/// query subscriptions), as the planner and `push_subscriptions.kind` name
/// them. Both doors read their words for it into this.
public enum PushSubscriptionKind: String, Sendable, CaseIterable {
    case database = "DATABASE"
    case zone = "ZONE"
    case query = "QUERY"
}

/// `saveSubscription`: creates or replaces (same subscriptionID) one of the
/// caller's subscriptions. A ZONE or QUERY subscription's zone must be one
/// the caller reaches in the scope (ZONE_NOT_FOUND otherwise; the policy
/// checks it again).
public struct SaveSubscriptionPlan: Sendable {
    public static let events: Set<String> = ["CREATE", "UPDATE", "DELETE"]

    public let statement: SQLStatement
    let hasZone: Bool
    let locations: [QueryError.Location]

    /// The record type of a QUERY subscription, to fetch its schema first;
    /// nil for the other kinds.
    public static func queryRecordType(of field: SelectedField, request: ParsedRequest) throws -> String? {
        let arguments = request.arguments(of: field)
        guard try arguments.string("kind") == "QUERY" else { return nil }
        return try RecordsPlan.recordType(of: field, request: request)
    }

    public init(_ field: SelectedField, request: ParsedRequest, schema: RecordSchema?) throws {
        locations = request.location(of: field.field)
        let arguments = request.arguments(of: field)
        let subscriptionID = try arguments.requiredString("subscriptionID")
        guard (1...255).contains(subscriptionID.unicodeScalars.count) else {
            throw arguments.invalid("subscriptionID", "subscriptionID must be 1-255 characters")
        }
        let kindText = try arguments.requiredString("kind")
        guard let kind = PushSubscriptionKind(rawValue: kindText) else {
            throw arguments.invalid("kind", "kind must be DATABASE, ZONE or QUERY, not \(kindText)")
        }
        let scopeText = try arguments.string("scope") ?? "PRIVATE"
        guard let scope = DatabaseScope(rawValue: scopeText) else {
            throw arguments.invalid("scope", "scope must be PRIVATE, SHARED or PUBLIC, not \(scopeText)")
        }
        if scope == .public && kind != .query {
            // CloudKit refuses database and zone subscriptions in its public database.
            throw QueryError(.badDatabase, DatabaseScope.notInPublic("\(kind.rawValue) subscriptions are refused there, as in CloudKit; use a QUERY subscription"),
                             locations: arguments.location("scope"))
        }
        let zonePresent = (try arguments.value("zone")).map { !$0.isNull } ?? false
        // The public database's query subscriptions are on its one zone, named or not.
        let zone = zonePresent ? try ZoneReference(scope: scope, in: arguments) : scope == .public ? ZoneReference.publicZone : nil
        switch kind {
        case .database where zone != nil:
            throw arguments.invalid("zone", "a DATABASE subscription covers every zone of its scope: leave zone out, or use kind ZONE")
        case .zone where zone == nil:
            throw arguments.invalid("zone", "a ZONE subscription needs zone")
        default: break
        }
        var query: PushQuery?
        var firesOn = ["CREATE", "DELETE", "UPDATE"]
        if kind == .query {
            let recordType = try RecordsPlan.recordType(of: field, request: request)
            let filter = try arguments.string("filter")
            if let filter, filter.utf8.count > 4096 {
                throw arguments.invalid("filter", "filter is \(filter.utf8.count) bytes; at most 4096")
            }
            let args = try arguments.value("args")
            let candidate = PushQuery(recordType: recordType, filter: filter, args: args.flatMap { $0.isNull ? nil : $0 })
            do {
                _ = try candidate.predicate(schema: schema ?? RecordSchema(fields: [:]))
            } catch var error as QueryError {
                error.locations = arguments.location("filter")
                throw error
            }
            query = candidate
            if try arguments.value("firesOn") != nil {
                let events = try arguments.strings("firesOn")
                guard !events.isEmpty, events.allSatisfy(Self.events.contains) else {
                    throw arguments.invalid("firesOn", "firesOn must list at least one of CREATE, UPDATE, DELETE")
                }
                firesOn = Array(Set(events)).sorted()
            }
        } else {
            for name in ["recordType", "filter", "args"] where try arguments.value(name).map({ !$0.isNull }) ?? false {
                throw arguments.invalid(name, "\(name) is only for a QUERY subscription")
            }
        }
        hasZone = zone != nil
        var builder = SQLBuilder()
        let projection = try Projection.pushSubscription(field.children, request: request, &builder)
        statement = Self.statement(subscriptionID: subscriptionID, kind: kind, scope: scope, zone: zone, query: query, firesOn: firesOn,
                                   projection: projection, &builder)
    }

    /// Web Services' `subscriptions/modify` create and update: a ZONE or
    /// QUERY subscription from the planner's typed input (a query's filter
    /// as Canopy's predicate text, which the subscription stores), answered
    /// as the reference's subscription dictionary, written in SQL
    /// (``Projection/cloudKitSubscription(_:)``).
    /// `notificationInfo`: the Notification Info Dictionary, as the door
    /// checked it, kept and answered back as saved.
    public init(
        subscriptionID: String, kind: PushSubscriptionKind, scope: DatabaseScope, zone: ZoneReference?, query: PushQuery?, firesOn: [String]?,
        notificationInfo: JSONValue? = nil, schema: RecordSchema?
    ) throws {
        locations = []
        guard (1...255).contains(subscriptionID.unicodeScalars.count) else {
            throw QueryError(.badRequest, "subscriptionID must be 1-255 characters")
        }
        guard kind == .zone || kind == .query else { throw QueryError(.badRequest, "a subscription is of type zone or query") }
        if scope == .public && kind != .query {
            throw QueryError(.badDatabase, DatabaseScope.notInPublic("\(kind.rawValue) subscriptions are refused there, as in CloudKit; use a QUERY subscription"))
        }
        let zone = zone ?? (scope == .public ? ZoneReference.publicZone : nil)
        if kind == .zone && zone == nil { throw QueryError(.badRequest, "a zone subscription needs zoneID") }
        var events = ["CREATE", "DELETE", "UPDATE"]
        if kind == .query {
            guard let query, Names.isRecordType(query.recordType) else { throw QueryError(.badRequest, "a query subscription needs query.recordType") }
            if let filter = query.filter, filter.utf8.count > 4096 {
                throw QueryError(.badRequest, "the query's filter is \(filter.utf8.count) bytes as Canopy's predicate; at most 4096")
            }
            _ = try query.predicate(schema: schema ?? RecordSchema(fields: [:]))
            if let firesOn {
                guard !firesOn.isEmpty, firesOn.allSatisfy(Self.events.contains) else {
                    throw QueryError(.badRequest, "firesOn lists at least one of create, update, delete")
                }
                events = Array(Set(firesOn)).sorted()
            }
        }
        hasZone = zone != nil
        var builder = SQLBuilder()
        statement = Self.statement(subscriptionID: subscriptionID, kind: kind, scope: scope, zone: zone, query: kind == .query ? query : nil,
                                   firesOn: events, notificationInfo: notificationInfo,
                                   projection: Projection.cloudKitSubscription(&builder, zone: zone == nil ? .none : .joined),
                                   joinsZone: zone != nil, &builder)
    }

    static func statement(
        subscriptionID: String, kind: PushSubscriptionKind, scope: DatabaseScope, zone: ZoneReference?, query: PushQuery?, firesOn: [String],
        notificationInfo: JSONValue? = nil, projection: SQL, joinsZone: Bool = false, _ builder: inout SQLBuilder
    ) -> SQLStatement {
        let zoneCTE: SQL = zone.map { "\($0.cte(&builder)), " } ?? ""
        let id = builder.bind(subscriptionID), kindBound = builder.bind(kind.rawValue), scopeBound = builder.bind(scope.rawValue)
        let recordType = builder.bind(query?.recordType), filter = builder.bind(query?.filter)
        let args: SQL = query?.args.map { builder.bind(json: $0) } ?? "NULL::jsonb"
        let events = builder.bind(firesOn)
        let info: SQL = notificationInfo.map { builder.bind(json: $0) } ?? "NULL::jsonb"
        let zoneID: SQL = zone == nil ? "NULL::bigint" : "(SELECT id FROM zone)"
        let guardZone: SQL = zone == nil ? "TRUE" : "EXISTS (SELECT 1 FROM zone)"
        builder.append("""
            WITH \(zoneCTE)saved AS (\
            INSERT INTO canopy.push_subscriptions AS s (user_id, subscription_id, kind, scope, zone_id, record_type, filter, args, fires_on, \
            notification_info) \
            SELECT canopy.current_user_id(), \(id), \(kindBound), \(scopeBound), \(zoneID), \(recordType), \(filter), \(args), \(events)::text[], \
            \(info) \
            WHERE \(guardZone) \
            ON CONFLICT (user_id, subscription_id) DO UPDATE SET kind = EXCLUDED.kind, scope = EXCLUDED.scope, zone_id = EXCLUDED.zone_id, \
            record_type = EXCLUDED.record_type, filter = EXCLUDED.filter, args = EXCLUDED.args, fires_on = EXCLUDED.fires_on, \
            notification_info = EXCLUDED.notification_info \
            RETURNING s.*) \
            SELECT \(projection)::text FROM saved s\(joinsZone ? " LEFT JOIN zone pz ON pz.id = s.zone_id" : "")
            """)
        return builder.query
    }
}

extension SaveSubscriptionPlan: FieldPlan {
    public static var writes: Bool { true }

    public func answer(_ row: JSONRow?) throws -> String? {
        guard let json = row?.json else {
            throw hasZone ? QueryError.zoneNotFound(at: locations) : QueryError(.internalError, "the subscription was not saved")
        }
        return json
    }
}

/// `subscriptions`: the caller's own, by subscriptionID.
public struct SubscriptionsPlan: Sendable {
    public let statement: SQLStatement

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        var builder = SQLBuilder()
        let projection = try Projection.pushSubscription(field.children, request: request, &builder)
        builder.append("""
            SELECT coalesce(json_agg(\(projection) ORDER BY s.subscription_id), '[]')::text \
            FROM canopy.push_subscriptions s WHERE s.user_id = canopy.current_user_id()
            """)
        statement = builder.query
    }
}

extension SubscriptionsPlan {
    /// Web Services' `subscriptions/list`: the caller's own in one database
    /// (nil: every database, for a path without one), as a JSON list of
    /// the reference's subscription dictionaries
    /// (``Projection/cloudKitSubscription(_:)``).
    public static func cloudKitStatement(scope: DatabaseScope?) -> SQLStatement {
        var builder = SQLBuilder()
        let projection = Projection.cloudKitSubscription(&builder)
        let inScope: SQL = scope.map { "s.scope = \(builder.bind($0.rawValue))" } ?? "TRUE"
        builder.append("""
            SELECT coalesce(jsonb_agg(\(projection) ORDER BY s.subscription_id), '[]')::text \
            FROM canopy.push_subscriptions s WHERE s.user_id = canopy.current_user_id() AND \(inScope)
            """)
        return builder.query
    }

    /// Web Services' `subscriptions/lookup`: the caller's subscriptions
    /// `ids`, in that order, each as its dictionary or, where the caller has
    /// none of that ID, the reference's item error with `missingCode` and
    /// the request's id.
    public static func cloudKitLookup(scope: DatabaseScope?, ids: [String], missingCode: String, requestID: String) -> SQLStatement {
        var builder = SQLBuilder()
        let projection = Projection.cloudKitSubscription(&builder)
        let inScope: SQL = scope.map { "s.scope = \(builder.bind($0.rawValue))" } ?? "TRUE"
        let code = builder.bind(missingCode), request = builder.bind(requestID)
        builder.append("""
            SELECT coalesce(jsonb_agg(coalesce((SELECT \(projection) FROM canopy.push_subscriptions s \
            WHERE s.user_id = canopy.current_user_id() AND \(inScope) AND s.subscription_id = a.id), \
            jsonb_build_object('subscriptionID', a.id, 'serverErrorCode', \(code)::text, \
            'reason', 'you have no subscription ' || left(a.id, 80), 'uuid', \(request)::text)) ORDER BY a.n), '[]')::text \
            FROM unnest(\(builder.bind(ids))::text[]) WITH ORDINALITY a(id, n)
            """)
        return builder.query
    }
}

extension SubscriptionsPlan: FieldPlan {
    public func answer(_ row: JSONRow?) throws -> String? { row?.json ?? "[]" }
}

/// `deleteSubscription(subscriptionID)`: UNKNOWN_ITEM when the caller has
/// none of that ID, as CloudKit answers.
public struct DeleteSubscriptionPlan: Sendable {
    public let statement: SQLStatement
    let subscriptionID: String
    let locations: [QueryError.Location]

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        self.init(subscriptionID: try arguments.requiredString("subscriptionID"), locations: arguments.location("subscriptionID"))
    }

    /// Web Services' `subscriptions/modify` delete.
    public init(subscriptionID: String, locations: [QueryError.Location] = []) {
        self.subscriptionID = subscriptionID
        self.locations = locations
        var builder = SQLBuilder()
        builder.append("""
            WITH gone AS (DELETE FROM canopy.push_subscriptions \
            WHERE user_id = canopy.current_user_id() AND subscription_id = \(builder.bind(subscriptionID)) RETURNING 1) \
            SELECT count(*)::int FROM gone
            """)
        statement = builder.query
    }
}

extension DeleteSubscriptionPlan: FieldPlan {
    public static var writes: Bool { true }

    public static func decode(_ row: PostgresRow) throws -> Int { try row.decode(Int.self) }

    public func answer(_ row: Int?) throws -> String? {
        guard (row ?? 0) > 0 else {
            throw QueryError(.unknownItem, "you have no subscription '\(subscriptionID)'", locations: locations)
        }
        return "true"
    }
}

extension Projection {
    /// A `PushSubscription` from `canopy.push_subscriptions` aliased `s`.
    static func pushSubscription(_ fields: [SelectedField], request: ParsedRequest, _ builder: inout SQLBuilder) throws -> SQL {
        try object(fields, &builder) { field, builder in
            switch field.name {
            case "subscriptionID": return "s.subscription_id"
            case "kind": return "s.kind"
            case "scope": return "s.scope"
            case "recordType": return "s.record_type"
            case "filter": return "s.filter"
            case "args": return "s.args"
            case "firesOn": return "to_json(s.fires_on)"
            case "__typename": return "'PushSubscription'"
            case "zone":
                let zone = try Projection.zone(field.children, id: "pz.id", owner: "pz.owner_id", name: "pz.name",
                                               ownerName: "coalesce(pu.record_name, \(builder.bind(DatabaseScope.publicOwnerName)))", request: request, &builder)
                // The public zone has no owner: CloudKit's __defaultOwner__ (ZoneReference).
                return """
                    (SELECT \(zone) FROM canopy.zones pz LEFT JOIN canopy.users pu ON pu.id = pz.owner_id AND pz.owner_id <> 0 \
                    WHERE pz.id = s.zone_id AND (pu.id IS NOT NULL OR pz.owner_id = 0))
                    """
            default: throw QueryError(.badRequest, "PushSubscription has no field \(field.name)")
            }
        }
    }
}
