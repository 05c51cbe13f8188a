import PostgresNIO

/// `lookup(scope, zone, recordNames)`: one statement returning whether the
/// zone exists for the caller and the `[LookupResult]` JSON, in the order
/// asked, with UNKNOWN_ITEM for names the caller cannot see.
public struct LookupPlan: Sendable {
    public static let maximumNames = 400
    public let statement: SQLStatement
    /// The statement's text and how to bind it again, when made recording.
    public let template: StatementTemplate?
    let locations: [QueryError.Location]

    /// What one `lookup` request asks, read and checked: its scope, zone
    /// and names. The plan cache (issue 51) makes one for every request,
    /// the SQL only for a shape not seen before.
    public struct Checked: Sendable {
        let zone: ZoneReference
        let locations: [QueryError.Location]
        /// The values a template binds again.
        public let values: PlanValues

        /// What of the request the statement's text depends on, besides
        /// the document: the scope (the names and the zone are bound).
        public var shape: String { "lookup|\(zone.shapeText)" }
    }

    public static func check(_ field: SelectedField, request: ParsedRequest) throws -> Checked {
        let arguments = request.arguments(of: field)
        let scope = try DatabaseScope.read(arguments, publicRefusal: nil)
        let zone = try ZoneReference(scope: scope, in: arguments)
        let names = try arguments.strings("recordNames")
        guard names.count <= Self.maximumNames else {
            throw QueryError(.limitExceeded, "lookup takes at most \(Self.maximumNames) recordNames, got \(names.count)", locations: arguments.location("recordNames"))
        }
        return Checked(zone: zone, locations: request.location(of: field.field), values: PlanValues(zone: zone, names: names))
    }

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        try self.init(Self.check(field, request: request), field: field, request: request)
    }

    /// A checked request's plan from a template made for its shape.
    public init(_ checked: Checked, template: StatementTemplate) throws {
        locations = checked.locations
        statement = try template.statement(for: checked.values)
        self.template = nil
    }

    /// A checked request's plan, its SQL written; `recording`, with the
    /// ``template`` the plan cache keeps.
    public init(_ checked: Checked, field: SelectedField, request: ParsedRequest, recording: Bool = false) throws {
        let zone = checked.zone
        let names = checked.values.names
        locations = checked.locations
        var builder = SQLBuilder(recording: recording)
        let cte = zone.cte(&builder)
        let result = try Projection.object(field.children, &builder) { child, builder in
            switch child.name {
            case "recordName": return "n.name"
            case "__typename": return "'LookupResult'"
            case "record":
                let record = try Projection.record(child.children, request: request, zone: zone, &builder)
                return "CASE WHEN r.id IS NULL THEN NULL ELSE \(record) END"
            case "error":
                let error = try Projection.object(child.children, &builder) { part, builder in
                    switch part.name {
                    case "code": return builder.key(ErrorCode.unknownItem.rawValue)
                    case "message": return "'record ' || n.name || ' does not exist'"
                    case "serverRecord": return "NULL::json"
                    case "__typename": return "'Error'"
                    default: throw QueryError(.badRequest, "Error has no field \(part.name)")
                    }
                }
                return "CASE WHEN r.id IS NULL THEN \(error) ELSE NULL END"
            default:
                throw QueryError(.badRequest, "LookupResult has no field \(child.name)")
            }
        }
        let bound = builder.bind(names, replaying: { $0.names })
        let owned = zone.ownerTest("found.owner_id", &builder)
        // Each name is a probe of the (zone_id, record_name) unique index:
        // as a LATERAL subquery with both columns equal, that is the only
        // plan the generic plan can take. A plain join let a generic plan
        // made before the table had statistics read the whole zone and
        // filter it (issue 39: W1 849 requests/s cold, docs/BENCHMARK_NOTES.md).
        builder.append("""
            WITH \(cte) SELECT EXISTS (SELECT 1 FROM zone), \
            (SELECT coalesce(json_agg(\(result) ORDER BY n.ord), '[]') \
            FROM unnest(\(bound)::text[]) WITH ORDINALITY n(name, ord) \
            LEFT JOIN LATERAL (SELECT found.* FROM canopy.records found \
            WHERE found.zone_id = (SELECT id FROM zone)\(owned) AND found.record_name = n.name LIMIT 1) r ON true)::text
            """)
        statement = builder.query
        template = builder.template
    }
}

extension LookupPlan {
    /// What one Web Services `records/lookup` asks, read and checked: the
    /// zone, the names and how its records are written. The plan cache
    /// keeps its statement by ``shape`` as it keeps GraphQL's `lookup`'s.
    public struct CloudKitLookup: Sendable {
        let zone: ZoneReference
        let style: CloudKitRecordStyle
        /// The values a template binds again: the zone, the names, the
        /// zone ID dictionary and the request's id.
        let values: PlanValues

        /// What of the request the statement's text depends on: the zone's
        /// shape, `numbersAsStrings`, the missing records' code and the
        /// request's `desiredKeys` (bound once, so part of the key); nil
        /// when records have `desiredKeys` of their own (planned each time).
        public var shape: String? {
            style.shapeText.map { "ck-lookup|\(zone.shapeText)|\($0)" }
        }
    }

    /// Web Services' `records/lookup`, checked: the records of `names` in
    /// `zone`, written in `style`.
    public static func check(zone: ZoneReference, names: [String], style: CloudKitRecordStyle) throws(QueryError) -> CloudKitLookup {
        guard names.count <= Self.maximumNames else {
            throw QueryError(.limitExceeded, "records/lookup takes at most \(Self.maximumNames) records, got \(names.count)")
        }
        var values = PlanValues(zone: zone, names: names)
        values.cloudKitZoneID = style.zoneID.jsonText
        values.requestID = style.requestID
        return CloudKitLookup(zone: zone, style: style, values: values)
    }

    /// Web Services' `records/lookup`: the records of `names` in `zone`, in
    /// the order asked, as CloudKit's record dictionaries, a name without a
    /// record (or one the caller cannot see) as its item's error. The
    /// answer is the `records` list's JSON text.
    public init(zone: ZoneReference, names: [String], style: CloudKitRecordStyle) throws(QueryError) {
        self.init(try Self.check(zone: zone, names: names, style: style))
    }

    /// A checked `records/lookup`'s plan from a template made for its shape.
    public init(_ lookup: CloudKitLookup, template: StatementTemplate) throws {
        locations = []
        statement = try template.statement(for: lookup.values)
        self.template = nil
    }

    /// A checked `records/lookup`'s plan, its SQL written; `recording`,
    /// with the ``template`` the plan cache keeps.
    public init(_ lookup: CloudKitLookup, recording: Bool = false) {
        var style = lookup.style
        style.zone = lookup.zone
        locations = []
        var builder = SQLBuilder(recording: recording)
        let cte = lookup.zone.cte(&builder)
        let record = Projection.cloudKitRecord(style, &builder)
        let missing: SQL = """
            json_build_object('recordName', n.name, 'serverErrorCode', \(builder.bind(style.missingCode))::text, \
            'reason', 'record ' || n.name || ' does not exist', 'uuid', \(builder.bind(style.requestID, replaying: { $0.requestID }))::text)::text
            """
        let bound = builder.bind(lookup.values.names, replaying: { $0.names })
        let owned = lookup.zone.ownerTest("found.owner_id", &builder)
        // The same probe of the (zone_id, record_name) index as GraphQL's lookup.
        builder.append("""
            WITH \(cte) SELECT EXISTS (SELECT 1 FROM zone), \
            (SELECT '[' || coalesce(string_agg(CASE WHEN r.id IS NULL THEN \(missing) ELSE \(record) END, ',' ORDER BY n.ord), '') || ']' \
            FROM unnest(\(bound)::text[]) WITH ORDINALITY n(name, ord) \
            LEFT JOIN LATERAL (SELECT found.* FROM canopy.records found \
            WHERE found.zone_id = (SELECT id FROM zone)\(owned) AND found.record_name = n.name LIMIT 1) r ON true)
            """)
        statement = builder.query
        template = builder.template
    }
}

extension LookupPlan {
    /// The record types of `names` in `zone` that the caller can see, as
    /// (recordName, recordType) rows: Web Services' `records/modify` reads
    /// them for an `update` that names no type.
    public static func recordTypes(zone: ZoneReference, names: [String]) throws(QueryError) -> SQLStatement {
        guard names.count <= maximumNames else {
            throw QueryError(.limitExceeded, "at most \(maximumNames) records, got \(names.count)")
        }
        var builder = SQLBuilder()
        let cte = zone.cte(&builder)
        builder.append("""
            WITH \(cte) SELECT r.record_name, r.record_type FROM canopy.records r \
            WHERE r.zone_id = (SELECT id FROM zone)\(zone.ownerTest("r.owner_id", &builder)) AND r.record_name = ANY(\(builder.bind(names))::text[])
            """)
        return builder.query
    }
}

extension LookupPlan: FieldPlan {
    public static var readsReplicas: Bool { true }

    public func answer(_ row: ZoneJSONRow?) throws -> String? {
        guard let row, row.zoneFound else { throw QueryError.zoneNotFound(at: locations) }
        return row.json
    }
}
