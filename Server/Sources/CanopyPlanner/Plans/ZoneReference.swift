/// A `ZoneID` argument in a scope: which zone an operation is about. Its
/// SQL is a `zone` CTE (id, name, owner_name, owner_id) that is empty when the zone
/// does not exist *for the caller* — row-level security decides — which
/// the gateway reports as ZONE_NOT_FOUND.
public struct ZoneReference: Sendable, Equatable {
    public let scope: DatabaseScope
    public let zoneName: String
    public let ownerName: String?
    /// For managing a share by zone name and an optional owner: the
    /// caller's zone, or (with ownerName) any zone the caller can see.
    let visibleToCaller: Bool
    /// Every zone of the scope the caller reaches, not one (Web Services'
    /// `zoneWide` queries): the `zone` CTE has a row a zone, and none is
    /// no zone to search rather than ZONE_NOT_FOUND.
    public private(set) var everyZone = false

    /// Every zone of `scope` the caller reaches: their own in the private
    /// database, those shared with them (row-level security decides) in
    /// the shared database, the one zone in the public database.
    public static func everyZone(of scope: DatabaseScope) -> ZoneReference {
        var zone = scope == .public ? publicZone : ZoneReference(scope: scope, zoneName: "", ownerName: nil, visibleToCaller: false)
        zone.everyZone = scope != .public
        return zone
    }

    /// A zone named by `zoneName` and an optional `ownerName` argument (the
    /// sharing mutations): the caller's own zone unless another owner is named.
    init(zoneNameIn arguments: Arguments, allowsOwnerName: Bool) throws {
        let zoneName = try arguments.requiredString("zoneName")
        guard Names.isZoneName(zoneName) else {
            throw arguments.invalid("zoneName", "zoneName must be 1-255 of A-Z a-z 0-9 _ . - and not start with _ (except _defaultZone)")
        }
        self.scope = .private
        self.zoneName = zoneName
        self.ownerName = allowsOwnerName ? try arguments.string("ownerName") : nil
        self.visibleToCaller = ownerName != nil
    }

    init(scope: DatabaseScope, argument name: String = "zone", in arguments: Arguments) throws {
        guard case .object(let object)? = try arguments.value(name) else {
            throw arguments.invalid(name, "\(name) must be {zoneName, ownerName}")
        }
        guard case .string(let zoneName)? = object["zoneName"], Names.isZoneName(zoneName) else {
            throw arguments.invalid(name, "zoneName must be 1-255 of A-Z a-z 0-9 _ . - and not start with _ (except _defaultZone)")
        }
        var ownerName: String?
        switch object["ownerName"] {
        case .string(let owner)?: ownerName = owner
        case nil, .null?: ownerName = nil
        case let other?: throw arguments.invalid(name, "ownerName must be a string, not \(other.typeName)")
        }
        if scope == .shared && ownerName == nil {
            throw arguments.invalid(name, "in SHARED scope the zone needs its ownerName")
        }
        if scope == .public {
            guard zoneName == "_defaultZone" else {
                throw QueryError(.badDatabase, DatabaseScope.notInPublic("there is no zone \(zoneName)"), locations: arguments.location(name))
            }
            // Whatever ownerName says (CloudKit clients send __defaultOwner__), the public zone has no owner.
            ownerName = nil
        }
        self.scope = scope
        self.zoneName = zoneName
        self.ownerName = ownerName
        self.visibleToCaller = false
    }

    /// A zone named in a request of another door (Web Services' zone ID
    /// dictionaries), checked as the `zone` argument is.
    public init(scope: DatabaseScope, zoneName: String, ownerName: String?) throws(QueryError) {
        guard Names.isZoneName(zoneName) else {
            throw QueryError(.badRequest, "zoneName must be 1-255 of A-Z a-z 0-9 _ . - and not start with _ (except _defaultZone)")
        }
        if scope == .shared && ownerName == nil {
            throw QueryError(.badRequest, "in the shared database a zone needs its ownerRecordName")
        }
        if scope == .public {
            guard zoneName == "_defaultZone" else {
                throw QueryError(.badDatabase, DatabaseScope.notInPublic("there is no zone \(zoneName)"))
            }
            self.init(scope: .public, zoneName: zoneName, ownerName: nil, visibleToCaller: false)
            return
        }
        self.init(scope: scope, zoneName: zoneName, ownerName: ownerName, visibleToCaller: false)
    }

    /// A zone a share is managed in, named by another door (Web Services'
    /// share records' zone ID): the caller's own zone, or with `ownerName`
    /// that owner's zone as the caller sees it, as the sharing mutations'
    /// `zoneName` and `ownerName` (issue 64: the owner was once ignored, so
    /// the caller's own zone of that name was changed instead).
    public init(sharingZoneName zoneName: String, ownerName: String?) throws(QueryError) {
        guard Names.isZoneName(zoneName) else {
            throw QueryError(.badRequest, "zoneName must be 1-255 of A-Z a-z 0-9 _ . - and not start with _ (except _defaultZone)")
        }
        self.init(scope: .private, zoneName: zoneName, ownerName: ownerName, visibleToCaller: ownerName != nil)
    }

    /// A `ZoneID` argument without a scope (moveRecords): the caller's own
    /// zone, or with `ownerName` any zone of that owner the caller can see
    /// (a zone shared with them, or their own).
    init(eitherScopeArgument name: String, in arguments: Arguments) throws {
        let named = try ZoneReference(scope: .private, argument: name, in: arguments)
        self.init(scope: .private, zoneName: named.zoneName, ownerName: named.ownerName, visibleToCaller: named.ownerName != nil)
    }

    /// The public database's one zone.
    static let publicZone = ZoneReference(scope: .public, zoneName: "_defaultZone", ownerName: nil, visibleToCaller: false)

    private init(scope: DatabaseScope, zoneName: String, ownerName: String?, visibleToCaller: Bool) {
        self.scope = scope
        self.zoneName = zoneName
        self.ownerName = ownerName
        self.visibleToCaller = visibleToCaller
    }

    /// The zone of a request's values, for a template's replays.
    static func zone(of values: PlanValues) throws -> ZoneReference {
        guard let zone = values.zone else { throw StatementTemplate.Mismatch() }
        return zone
    }

    /// What of the zone shapes its SQL: the scope, and whether any owner's zone will do.
    var shapeText: String {
        "\(scope.rawValue)\(visibleToCaller ? "+" : "")\(everyZone ? "*" : "")"
    }

    /// How a zone named by its owner's record name (the shared database,
    /// the sharing mutations' `ownerName`) finds its owner: by joining the
    /// owner's user row (one PostgreSQL), or, where statements must name
    /// the owner's id to route to one shard (Citus), by the owner's id as
    /// a parameter, which the statement's runner looks up by the name
    /// (`canopy.owner_id_named`) and binds: Citus plans some statements only
    /// with the value (DECISIONS 169, 176). On one PostgreSQL the join
    /// costs no round trip, so it stays there. The gateway sets it for its requests on Citus
    /// (`OwnerRoutingMiddleware`); one engine a process, so the plan cache
    /// needs no key for it.
    public enum NamedOwners: Sendable {
        case joined
        case routed
    }

    @TaskLocal public static var namedOwners: NamedOwners = .joined

    /// ` AND <column> = <owner>`, for each zone-scoped table a statement
    /// reads beside the `zone` CTE: the caller's id for their own zones, 0
    /// for the public zone, and on Citus the id of the owner a zone is named
    /// by, bound by the statement's runner (DECISIONS 168-169, 176). Citus routes a
    /// statement to the one shard of that owner only when every distributed
    /// table in it is given the owner; on one PostgreSQL it is one more
    /// equality on a row already found. Nothing for every zone of the
    /// shared database (many owners).
    func ownerTest(_ column: SQL, _ builder: inout SQLBuilder) -> SQL {
        ownerValue(&builder).map { " AND \(column) = \($0)" } ?? ""
    }

    /// The owner's id as `ownerTest` names it, or nil where it names none.
    func ownerValue(_ builder: inout SQLBuilder) -> SQL? {
        if scope == .public { return "0" }
        if everyZone { return scope == .private ? builder.caller() : nil }
        if scope == .private && !visibleToCaller { return builder.caller() }
        guard Self.namedOwners == .routed else { return nil }
        return Self.ownerNamed(ownerName, &builder)
    }

    /// The id of the owner a request names, a parameter the statement's
    /// runner binds after looking the name up (``SQLBuilder/owner(named:replaying:)``;
    /// another request of the shape names its own).
    private static func ownerNamed(_ ownerName: String?, _ builder: inout SQLBuilder) -> SQL {
        builder.owner(named: ownerName, replaying: { try Self.zone(of: $0).ownerName })
    }

    /// The owner's record name, bound (another request binds its own).
    private func bindOwnerName(_ builder: inout SQLBuilder) -> SQL {
        builder.bind(ownerName, replaying: { try Self.zone(of: $0).ownerName })
    }

    /// `zone AS (...)`, for a WITH clause.
    func cte(_ builder: inout SQLBuilder) -> SQL {
        cte(named: "zone", &builder)
    }

    /// `NAME AS (...)`: the zone, for a WITH clause that names two.
    func cte(named cteName: SQL, _ builder: inout SQLBuilder) -> SQL {
        if scope == .public {
            builder.noteOwner(id: 0)
            return """
                \(cteName) AS (SELECT z.id, z.name, \(builder.bind(DatabaseScope.publicOwnerName))::text AS owner_name, z.owner_id \
                FROM canopy.zones z WHERE z.owner_id = 0)
                """
        }
        if everyZone {
            let caller = builder.caller()
            let ownership: SQL = scope == .private ? "z.owner_id = \(caller)" : "z.owner_id <> \(caller) AND z.owner_id <> 0"
            return """
                \(cteName) AS (SELECT z.id, z.name, u.record_name AS owner_name, z.owner_id FROM canopy.zones z \
                JOIN canopy.users u ON u.id = z.owner_id WHERE \(ownership))
                """
        }
        // Recording (the plan cache), another request binds its own zone.
        builder.noteOwner(named: ownerName)
        let name = builder.bind(zoneName, replaying: { try Self.zone(of: $0).zoneName })
        let ownership: SQL
        if scope == .private && !visibleToCaller {
            let owner = bindOwnerName(&builder)
            ownership = "z.owner_id = \(builder.caller()) AND (\(owner)::text IS NULL OR u.record_name = \(owner))"
        } else {
            let named: SQL =
                Self.namedOwners == .routed ? "z.owner_id = \(Self.ownerNamed(ownerName, &builder))" : "u.record_name = \(bindOwnerName(&builder))"
            // The public zone's owner 0 (migrations/0038) is nobody's zone outside the public scope.
            ownership = visibleToCaller ? "z.owner_id <> 0 AND \(named)" : "z.owner_id <> \(builder.caller()) AND z.owner_id <> 0 AND \(named)"
        }
        return """
            \(cteName) AS (SELECT z.id, z.name, u.record_name AS owner_name, z.owner_id FROM canopy.zones z \
            JOIN canopy.users u ON u.id = z.owner_id WHERE z.name = \(name) AND \(ownership))
            """
    }
}
