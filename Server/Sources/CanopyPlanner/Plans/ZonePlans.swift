import PostgresNIO

/// `zones(scope)`: one statement, one JSON array.
public struct ZonesPlan: Sendable {
    public let statement: SQLStatement

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let scope = try DatabaseScope.read(request.arguments(of: field), publicRefusal: DatabaseScope.notInPublic("it lists no zones"))
        var builder = SQLBuilder()
        let zone = try Projection.zone(field.children, id: "z.id", owner: "z.owner_id", name: "z.name", ownerName: "u.record_name", request: request, &builder)
        let caller = builder.caller()
        let (filter, order): (SQL, SQL) = scope == .private
            ? ("z.owner_id = \(caller)", "z.name")
            : ("z.owner_id <> \(caller) AND z.owner_id <> 0", "u.record_name, z.name")
        builder.append("""
            SELECT coalesce(json_agg(\(zone) ORDER BY \(order)), '[]')::text \
            FROM canopy.zones z JOIN canopy.users u ON u.id = z.owner_id WHERE \(filter)
            """)
        statement = builder.query
    }
}

/// `saveZone(zoneName)`: creates the caller's zone, or returns it if it exists.
public struct SaveZonePlan: Sendable {
    public let statement: SQLStatement

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let name = try arguments.requiredString("zoneName")
        guard Names.isZoneName(name) else {
            throw arguments.invalid("zoneName", "zoneName '\(name)' must be 1-255 of A-Z a-z 0-9 _ . - and not start with _")
        }
        var builder = SQLBuilder()
        let zone = try Projection.zone(field.children, id: "z.id", owner: "z.owner_id", name: "z.name", ownerName: "u.record_name", request: request, &builder)
        let bound = builder.bind(name)
        builder.append("""
            \(Self.madeOrFound(bound, caller: builder.caller()))SELECT \(zone)::text FROM found z JOIN canopy.users u ON u.id = z.owner_id LIMIT 1
            """)
        statement = builder.query
    }
}

extension SaveZonePlan {
    /// `WITH inserted …, found …`: the caller's zone named `name` (bound),
    /// made if new; both doors' statements select from `found`.
    static func madeOrFound(_ name: SQL, caller: SQL) -> SQL {
        """
        WITH inserted AS (INSERT INTO canopy.zones (owner_id, name) VALUES (\(caller), \(name)) \
        ON CONFLICT (owner_id, name) DO NOTHING RETURNING id, owner_id, name), \
        found AS (SELECT id, owner_id, name FROM inserted UNION ALL \
        SELECT id, owner_id, name FROM canopy.zones WHERE owner_id = \(caller) AND name = \(name)) 
        """
    }

    /// Web Services' `zones/modify` create: the caller's zone of that name,
    /// made if new, as (zoneName, ownerName).
    public static func statement(zoneName name: String) throws(QueryError) -> SQLStatement {
        guard Names.isZoneName(name) else {
            throw QueryError(.badRequest, "zoneName '\(name.prefix(80))' must be 1-255 of A-Z a-z 0-9 _ . - and not start with _")
        }
        var builder = SQLBuilder()
        let bound = builder.bind(name)
        builder.append("""
            \(madeOrFound(bound, caller: builder.caller()))SELECT z.name, u.record_name FROM found z JOIN canopy.users u ON u.id = z.owner_id LIMIT 1
            """)
        return builder.query
    }
}

/// `deleteZone(scope, zone)`: the owner deletes the zone (and its records
/// and shares); in SHARED scope the caller leaves every share in it. The
/// statement returns how many rows it touched: 0 is ZONE_NOT_FOUND.
public struct DeleteZonePlan: Sendable {
    public let statement: SQLStatement
    let locations: [QueryError.Location]

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let scope = try DatabaseScope.read(arguments, publicRefusal: DatabaseScope.notInPublic("its zone cannot be deleted"))
        let zone = try ZoneReference(scope: scope, in: arguments)
        if scope == .private && zone.zoneName == "_defaultZone" {
            throw arguments.invalid("zone", "the default zone cannot be deleted")
        }
        self.init(zone, locations: request.location(of: field.field))
    }

    /// Web Services' `zones/modify` delete: the zone, in its scope.
    public init(zone: ZoneReference) throws(QueryError) {
        if zone.scope == .public { throw QueryError(.badDatabase, DatabaseScope.notInPublic("its zone cannot be deleted")) }
        if zone.scope == .private && zone.zoneName == "_defaultZone" {
            throw QueryError(.badRequest, "the default zone cannot be deleted")
        }
        self.init(zone, locations: [])
    }

    init(_ zone: ZoneReference, locations: [QueryError.Location]) {
        let scope = zone.scope
        self.locations = locations
        var builder = SQLBuilder()
        let cte = zone.cte(&builder)
        switch scope {
        case .private:
            builder.append("""
                WITH \(cte), deleted AS (DELETE FROM canopy.zones WHERE id IN (SELECT id FROM zone)\(zone.ownerTest("owner_id", &builder)) RETURNING 1) \
                SELECT count(*)::int FROM deleted
                """)
        case .shared, .public:   // PUBLIC was refused above
            builder.append("WITH \(cte) SELECT coalesce((SELECT canopy.leave_shares(zone.id, NULL) FROM zone), 0)::int")
        }
        statement = builder.query
    }
}

extension ZonesPlan: FieldPlan {
    public func answer(_ row: JSONRow?) throws -> String? { row?.json }
}

extension SaveZonePlan: FieldPlan {
    public static var writes: Bool { true }
    public func answer(_ row: JSONRow?) throws -> String? { row?.json }
}

extension DeleteZonePlan: FieldPlan {
    public static var writes: Bool { true }

    /// How many zones the statement deleted or left.
    public static func decode(_ row: PostgresRow) throws -> Int {
        try row.decode(Int.self)
    }

    public func answer(_ row: Int?) throws -> String? {
        guard (row ?? 0) > 0 else { throw QueryError.zoneNotFound(at: locations) }
        return "true"
    }
}
