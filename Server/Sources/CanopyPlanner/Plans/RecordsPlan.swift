import Crypto
import Foundation
import PostgresNIO

/// `records(scope, zone, recordType, filter, args, sort, limit, cursor)`:
/// one statement that filters with the compiled predicate, orders by the
/// sort keys (missing values last) with recordName as the final tie-break,
/// and resumes after the cursor's keys (keyset, not offset).
public struct RecordsPlan: Sendable {
    public static let maximumLimit = 400

    struct SortKey: Sendable {
        var target: CheckedPredicate.Target
        var descending: Bool
        /// For a LOCATION field: sort by the distance from this point
        /// (CloudKit's `relativeLocation`), nearest first when ascending.
        var origin: (latitude: Double, longitude: Double)? = nil
        /// Its place among the sort keys (a template's replays read another
        /// request's origin by it).
        var index = 0
        var direction: SQL { descending ? "DESC" : "ASC" }

        /// What the key orders by: the field's value, or its distance (km)
        /// from `origin`. The point's coordinates are bound.
        func expression(_ builder: inout SQLBuilder) -> SQL {
            let value = PredicateSQL.expression(target)
            guard let origin else { return value }
            let index = self.index
            return PredicateSQL.distance(value, latitude: origin.latitude, longitude: origin.longitude, &builder) { values in
                guard index < values.sortKeys.count, let origin = values.sortKeys[index].origin else { throw StatementTemplate.Mismatch() }
                return (origin.latitude, origin.longitude)
            }
        }

        /// What of the key shapes the SQL: its target, direction and whether it sorts by distance.
        var shapeText: String {
            target.fingerprintText + (descending ? "-" : "+") + (origin == nil ? "" : "@")
        }

        /// The type its values compare as (a distance is a number).
        var valueType: FieldType { origin == nil ? target.valueType : .double }

        var fingerprintText: String {
            target.fingerprintText + (descending ? "true" : "false") + (origin.map { "@\($0.latitude),\($0.longitude)" } ?? "")
        }
    }

    public let statement: SQLStatement
    /// The statement's text and how to bind it again, when made recording.
    public let template: StatementTemplate?
    public let limit: Int
    /// GraphQL's selection under `RecordPage`; nil for a CloudKit rendering.
    let field: SelectedField?
    let fingerprint: String
    let secret: SigningKey
    let locations: [QueryError.Location]

    /// The record type a `records` field asks for, to fetch its schema first.
    public static func recordType(of field: SelectedField, request: ParsedRequest) throws -> String {
        let arguments = request.arguments(of: field)
        let type = try arguments.requiredString("recordType")
        guard Names.isRecordType(type) else {
            throw arguments.invalid("recordType", "recordType '\(type)' must be a letter followed by letters, digits or _")
        }
        return type
    }

    /// What one `records` request asks, read from its arguments and checked
    /// against the record type's schema: every error a request's values can
    /// cause is thrown making it, in the order the arguments are read. The
    /// plan cache (issue 51) makes one for every request; the SQL only for
    /// a shape not seen before.
    public struct Checked: Sendable {
        let query: RecordsQuery
        let predicate: CheckedPredicate
        let sortKeys: [SortKey]
        let after: Cursor?
        let fingerprint: String
        let locations: RecordsQuery.Locations
        /// The values a template binds again.
        public let values: PlanValues

        /// Everything of the request that the statement's text depends on
        /// (the values themselves only bound): the scope, the record type,
        /// the filter's text and its tests with their values' kinds, the
        /// sort keys and the cursor's kinds. With the document, the root
        /// field and the variables read below it, a plan cache's key.
        public var shape: String {
            let filter = query.filterShape ?? query.filterText
            var text = "records|\(query.zone.shapeText)|\(query.recordType)|\(filter.utf8.count):\(filter)|"
            predicate.writeShape(into: &text)
            text += "|"
            for key in sortKeys { text += key.shapeText + "," }
            text += "|"
            if let after {
                for key in after.keys { text += Self.kind(of: key) }
            } else {
                text += "-"
            }
            return text
        }

        /// A cursor key's kind; a flag (whether a sort key was missing) by value.
        static func kind(of value: JSONValue) -> String {
            switch value {
            case .null: return "n"
            case .bool(let flag): return flag ? "t" : "f"
            case .int: return "i"
            case .double: return "d"
            case .string: return "s"
            case .array: return "a"
            case .object: return "o"
            }
        }
    }

    /// GraphQL's `records` field: its arguments read and checked.
    public static func check(_ field: SelectedField, request: ParsedRequest, schema: RecordSchema, secret: SigningKey) throws -> Checked {
        let arguments = request.arguments(of: field)
        let scope = try DatabaseScope.read(arguments, publicRefusal: nil)
        let zone = try ZoneReference(scope: scope, in: arguments)
        let recordType = try Self.recordType(of: field, request: request)
        let limit = try arguments.limit(default: 100, maximum: Self.maximumLimit)
        let filterText = try arguments.string("filter")
        let predicate: PredicateSyntax
        do {
            predicate = try filterText.map(PredicateParser.parse) ?? .all
        } catch var error as QueryError {
            error.locations = arguments.location("filter")
            throw error
        }
        let items: [JSONValue]
        switch try arguments.value("sort") {
        case nil, .null?: items = []
        case .array(let list)?: items = list
        case let single?: items = [single]
        }
        let sort: [SortRequest]
        do {
            sort = try items.map { item throws(QueryError) in try SortRequest(item) }
        } catch {
            var located = error
            located.locations = arguments.location("sort")
            throw located
        }
        let query = RecordsQuery(
            zone: zone, recordType: recordType, predicate: predicate, args: try arguments.value("args"), sort: sort,
            limit: limit, cursor: try arguments.string("cursor"), filterText: filterText ?? ""
        )
        return try check(
            query, schema: schema, secret: secret,
            locations: RecordsQuery.Locations(
                field: request.location(of: field.field), filter: arguments.location("filter"),
                sort: arguments.location("sort"), cursor: arguments.location("cursor")
            )
        )
    }

    static func check(_ query: RecordsQuery, schema: RecordSchema, secret: SigningKey, locations: RecordsQuery.Locations) throws -> Checked {
        let checker = PredicateChecker(schema: schema, recordType: query.recordType, args: query.args)
        let predicate: CheckedPredicate
        do {
            predicate = try checker.check(query.predicate)
        } catch var error as QueryError {
            error.locations = locations.filter
            throw error
        }
        let sortKeys = try Self.sortKeys(query.sort, checker: checker, locations: locations.sort)
        let zone = query.zone
        let fingerprint = Cursor.fingerprint([
            zone.scope.rawValue, zone.zoneName, zone.ownerName ?? "", query.recordType, query.filterText, query.args?.jsonText ?? "",
            sortKeys.map(\.fingerprintText).joined(separator: ","),
        ] + (zone.everyZone ? ["every zone"] : []))
        var after: Cursor?
        if let text = query.cursor {
            // A zone-wide page's cursor ends with the zone of its last record.
            let count = sortKeys.count * 2 + 1 + (zone.everyZone ? 1 : 0)
            guard let cursor = Cursor.decode(text, secret: secret, fingerprint: fingerprint), cursor.keys.count == count else {
                throw QueryError(.invalidArguments, "the cursor is not one this server issued for this query", locations: locations.cursor)
            }
            after = cursor
        }
        let values = PlanValues(zone: zone, limit: query.limit, predicate: predicate, sortKeys: sortKeys, cursorKeys: after?.keys ?? [])
        return Checked(query: query, predicate: predicate, sortKeys: sortKeys, after: after, fingerprint: fingerprint, locations: locations, values: values)
    }

    /// GraphQL's `records` field: its arguments read into a ``RecordsQuery``.
    public init(_ field: SelectedField, request: ParsedRequest, schema: RecordSchema, secret: SigningKey) throws {
        try self.init(Self.check(field, request: request, schema: schema, secret: secret), field: field, request: request, secret: secret)
    }

    /// A checked GraphQL request's plan, its SQL written; `recording`, with
    /// the ``template`` the plan cache keeps.
    public init(_ checked: Checked, field: SelectedField, request: ParsedRequest, secret: SigningKey, recording: Bool = false) throws {
        let records = field.children.first { $0.name == "records" }
        try self.init(checked, rendering: records.map { .graphQL($0.children, request) }, secret: secret, field: field, recording: recording)
    }

    /// A checked request's plan from a template made for its shape: only
    /// its values bound. Throws ``StatementTemplate/Mismatch`` when the
    /// values do not have the template's shape.
    public init(_ checked: Checked, field: SelectedField?, secret: SigningKey, template: StatementTemplate) throws {
        self.secret = secret
        self.locations = checked.locations.field
        self.limit = checked.query.limit
        self.field = field
        self.fingerprint = checked.fingerprint
        self.statement = try template.statement(for: checked.values)
        self.template = nil
    }

    /// A query in the planner's terms (Web Services' `records/query`),
    /// its records rendered as `rendering` says.
    public init(_ query: RecordsQuery, rendering: RecordRendering, schema: RecordSchema, secret: SigningKey) throws {
        let checked = try Self.check(query, schema: schema, secret: secret, locations: RecordsQuery.Locations())
        try self.init(checked, rendering: rendering, schema: schema, secret: secret, field: nil, recording: false)
    }

    init(
        _ checked: Checked, rendering: RecordRendering?, schema: RecordSchema? = nil, secret: SigningKey,
        field: SelectedField?, recording: Bool
    ) throws {
        self.secret = secret
        self.locations = checked.locations.field
        let query = checked.query
        let recordType = query.recordType
        let limit = query.limit
        let predicate = checked.predicate
        let sortKeys = checked.sortKeys
        let after = checked.after
        self.limit = limit
        self.field = field
        self.fingerprint = checked.fingerprint
        let zone = query.zone

        var builder = SQLBuilder(recording: recording)
        let cte = zone.cte(&builder)
        let filter = PredicateSQL.write(predicate, &builder)
        let limitBind = builder.bind(limit, replaying: { $0.limit })
        let records: SQL
        switch rendering {
        case .graphQL(let fields, let request)?:
            let record = try Projection.record(fields, request: request, zone: zone, &builder)
            records = "(SELECT coalesce(json_agg(\(record) ORDER BY r.canopy_ord), '[]') FROM page r WHERE r.canopy_ord <= \(limitBind)::int8)::text"
        case .cloudKit(var style)?:
            style.schema = schema
            style.zone = zone
            records = Projection.cloudKitRecordList(style, from: "FROM page r WHERE r.canopy_ord <= \(limitBind)::int8", order: "r.canopy_ord", &builder)
        case nil:
            records = "NULL::text"
        }
        // The record type is a literal (it matched the name grammar), so the
        // planner can match the partial indexes `canopy schema apply` builds.
        // Zone-wide (every zone of the scope): any of the zone CTE's rows,
        // ordered by (sort keys, recordName, zone) so a cursor is exact.
        let zones: SQL = zone.everyZone ? "r.zone_id IN (SELECT id FROM zone)" : "r.zone_id = (SELECT id FROM zone)"
        let base: SQL = "FROM canopy.records r WHERE \(zones)\(zone.ownerTest("r.owner_id", &builder)) AND r.record_type = \(SQL.literal(recordType)) AND \(filter)"
        let page: SQL
        if sortKeys.count == 1 && !zone.everyZone {
            page = try Self.singleKeyPage(sortKeys[0], predicate: predicate, after: after?.keys, base: base, limit: limitBind, &builder)
        } else {
            page = try Self.page(sortKeys, after: after?.keys, base: base, limit: limitBind, byZone: zone.everyZone, &builder)
        }
        let found: SQL = zone.everyZone ? "TRUE" : "EXISTS (SELECT 1 FROM zone)"
        builder.append("""
            WITH \(cte), page AS (\(page)) \
            SELECT \(found), \
            \(records), \
            (SELECT r.canopy_keys FROM page r WHERE r.canopy_ord = \(limitBind)::int8)::text, \
            (SELECT count(*) FROM page) > \(limitBind)::int8
            """)
        statement = builder.query
        template = builder.template
    }

    static func sortKeys(_ items: [SortRequest], checker: PredicateChecker, locations: [QueryError.Location]) throws -> [SortKey] {
        func invalid(_ message: String) -> QueryError { QueryError(.invalidArguments, message, locations: locations) }
        return try items.enumerated().map { index, item in
            var key = try sortKey(item, checker: checker, invalid: invalid)
            key.index = index
            return key
        }
    }

    private static func sortKey(_ sort: SortRequest, checker: PredicateChecker, invalid: (String) -> QueryError) throws -> SortKey {
            let name = sort.field
            let target: CheckedPredicate.Target
            do {
                target = try checker.target(name, column: 0)
            } catch {
                throw invalid("cannot sort by \(name): record type \(checker.recordType) has no such field")
            }
            do {
                _ = try checker.target(name, column: 0, index: .sortable)
            } catch let error as QueryError {
                throw invalid(error.message)
            }
            if let point = sort.relativeLocation {
                guard target.valueType == .location else {
                    throw invalid("relativeLocation sorts a LOCATION field by distance; \(name) is \(target.valueType)")
                }
                guard abs(point.latitude) <= 90, abs(point.longitude) <= 180 else {
                    throw invalid("relativeLocation must be {latitude: -90..90, longitude: -180..180}")
                }
                return SortKey(target: target, descending: sort.descending, origin: (point.latitude, point.longitude))
            }
            switch target.valueType {
            case .list, .location, .bytes, .asset: throw invalid("cannot sort by \(name), \(Article.indefinite(target.valueType.description))")
            default: return SortKey(target: target, descending: sort.descending)
            }
    }

    /// Any number of sort keys: one ORDER BY over every key (missing values
    /// last), then recordName (and, `byZone`, the zone: a zone-wide query's
    /// names repeat across zones). Right for all; fast only without sort keys.
    static func page(
        _ sortKeys: [SortKey], after keys: [JSONValue]?, base: SQL, limit: SQL, byZone: Bool = false, _ builder: inout SQLBuilder
    ) throws -> SQL {
        var order: [SQL] = []
        var columns: [SQL] = []
        for key in sortKeys {
            let expression = key.expression(&builder)
            order.append("(\(expression)) IS NULL")
            order.append("\(expression) \(key.direction)")
            columns.append("(\(expression)) IS NULL")
            columns.append(expression)
        }
        order.append("r.record_name COLLATE \"C\" ASC")
        columns.append("r.record_name")
        if byZone {
            order.append("r.zone_id ASC")
            columns.append("r.zone_id")
        }
        let keyset = try keys.map { try Self.keyset(sortKeys, after: $0, byZone: byZone, &builder) } ?? "TRUE"
        let ordered = order.joined(separator: ", ")
        return "SELECT r.*, row_number() OVER (ORDER BY \(ordered)) AS canopy_ord, json_build_array(\(columns.joined(separator: ", "))) AS canopy_keys \(base) AND \(keyset) ORDER BY \(ordered) LIMIT \(limit)::int8 + 1"
    }

    /// One sort key, in two parts each an index can answer in order: the
    /// records that have the key, by (key, recordName), and then those
    /// missing it, by recordName. Each part reads at most limit + 1 rows, and
    /// the cursor's position is a row comparison an index can seek to, so a
    /// page 50 pages deep costs what the first does. The second part is left
    /// out when the filter already requires the key (or it is never missing).
    /// The key's value is computed once a row (`canopy_sort`), and the
    /// cursor's keys are built from it outside the parts.
    static func singleKeyPage(
        _ key: SortKey, predicate: CheckedPredicate, after keys: [JSONValue]?, base: SQL, limit: SQL, _ builder: inout SQLBuilder
    ) throws -> SQL {
        let expression = key.expression(&builder)
        let name: SQL = "r.record_name COLLATE \"C\""
        var inMissingPart = false
        var valueAfter: SQL?
        var nameAfter: SQL?
        if let keys {
            guard keys.count == 3, case .bool(let wasNull) = keys[0], case .string(let last) = keys[2] else {
                throw QueryError(.invalidArguments, "the cursor is damaged")
            }
            inMissingPart = wasNull
            nameAfter = "\(builder.bind(last, replaying: { try Self.cursorName(at: 2, in: $0) }))::text"
            if !wasNull { valueAfter = try bound(keys[1], at: 1, for: key.valueType, &builder) }
        }
        let neverMissing: Bool
        switch key.target {
        case .recordName, .creationDate, .modificationDate: neverMissing = true
        default: neverMissing = predicate.requiresValue(of: key.target)
        }
        var parts: [SQL] = []
        if !inMissingPart {
            var condition: SQL = "\(expression) IS NOT NULL"
            if let valueAfter, let nameAfter {
                condition = key.descending
                    ? "\(expression) <= \(valueAfter) AND (\(expression) < \(valueAfter) OR \(name) > \(nameAfter))"
                    : "(\(expression), \(name)) > (\(valueAfter), \(nameAfter))"
            }
            parts.append("""
                (SELECT r.*, 0 AS canopy_part, \(expression) AS canopy_sort \
                \(base) AND \(condition) ORDER BY \(expression) \(key.direction), \(name) LIMIT \(limit)::int8 + 1)
                """)
        }
        if inMissingPart || !neverMissing {
            let condition: SQL = nameAfter.map { "\(expression) IS NULL AND \(name) > \($0)" } ?? "\(expression) IS NULL"
            parts.append("""
                (SELECT r.*, 1 AS canopy_part, NULL AS canopy_sort \
                \(base) AND \(condition) ORDER BY \(name) LIMIT \(limit)::int8 + 1)
                """)
        }
        return """
            SELECT p.*, row_number() OVER (ORDER BY p.canopy_part, p.canopy_sort \(key.direction), p.record_name COLLATE "C") AS canopy_ord, \
            json_build_array(p.canopy_part = 1, p.canopy_sort, p.record_name) AS canopy_keys \
            FROM (\(parts.joined(separator: " UNION ALL "))) p
            """
    }

    /// A cursor's key value (its `index`th key), bound as the type the key compares as.
    static func bound(_ value: JSONValue, at index: Int, for type: FieldType, _ builder: inout SQLBuilder) throws -> SQL {
        let mismatch = StatementTemplate.Mismatch()
        let key: @Sendable (PlanValues) throws -> JSONValue = { values in
            guard index < values.cursorKeys.count else { throw mismatch }
            return values.cursorKeys[index]
        }
        switch (type, value) {
        case (.string, .string(let text)), (.reference, .string(let text)):
            return "\(builder.bind(text, replaying: { guard case .string(let t) = try key($0) else { throw mismatch }; return t }))::text"
        case (.boolean, .bool(let flag)):
            return "\(builder.bind(flag, replaying: { guard case .bool(let b) = try key($0) else { throw mismatch }; return b }))::boolean"
        case (_, .int), (_, .double):
            let number: @Sendable (JSONValue) throws -> Double = { value in
                switch value {
                case .int(let n): return Double(n)
                case .double(let n): return n
                default: throw mismatch
                }
            }
            return "\(builder.bind(try number(value), replaying: { try number(try key($0)) }))::float8"
        default: throw QueryError(.invalidArguments, "the cursor is damaged")
        }
    }

    /// The record name a cursor's `index`th key holds, in another request's values.
    static func cursorName(at index: Int, in values: PlanValues) throws -> String {
        guard index < values.cursorKeys.count, case .string(let name) = values.cursorKeys[index] else { throw StatementTemplate.Mismatch() }
        return name
    }

    /// Rows strictly after the cursor's keys in the sort order (`byZone`:
    /// the last key is the zone, after the record name).
    static func keyset(_ sortKeys: [SortKey], after keys: [JSONValue], byZone: Bool = false, _ builder: inout SQLBuilder) throws -> SQL {
        let nameIndex = keys.count - (byZone ? 2 : 1)
        guard nameIndex >= 0, case .string(let lastName) = keys[nameIndex] else { throw QueryError(.invalidArguments, "the cursor is damaged") }
        let boundName: SQL = "\(builder.bind(lastName, replaying: { try Self.cursorName(at: nameIndex, in: $0) }))::text"
        var condition: SQL = "r.record_name COLLATE \"C\" > \(boundName)"
        if byZone {
            guard case .int(let lastZone) = keys[keys.count - 1] else { throw QueryError(.invalidArguments, "the cursor is damaged") }
            let zone = builder.bind(lastZone, replaying: { values in
                guard case .int(let zone)? = values.cursorKeys.last else { throw StatementTemplate.Mismatch() }
                return zone
            })
            condition = "(r.record_name COLLATE \"C\", r.zone_id) > (\(boundName), \(zone)::int8)"
        }
        for (index, key) in sortKeys.enumerated().reversed() {
            let expression = key.expression(&builder)
            guard case .bool(let wasNull) = keys[index * 2] else { throw QueryError(.invalidArguments, "the cursor is damaged") }
            let value = keys[index * 2 + 1]
            let nullFlag: SQL = "((\(expression)) IS NULL)"
            if wasNull {
                // After a missing value come only later missing values (by the next keys).
                condition = "(\(nullFlag) AND \(condition))"
                continue
            }
            let bound = try Self.bound(value, at: index * 2 + 1, for: key.valueType, &builder)
            let strictlyAfter: SQL = key.descending ? "\(expression) < \(bound)" : "\(expression) > \(bound)"
            condition = "(\(nullFlag) OR coalesce(\(strictlyAfter), false) OR (coalesce(\(expression) = \(bound), false) AND \(condition)))"
        }
        return condition
    }

    /// The statement's row: whether the zone is there for the caller, the
    /// page's records (JSON), the sort keys of its last record (JSON), and
    /// whether more follow.
    public struct Row: Sendable {
        public var zoneFound: Bool
        public var records: String?
        public var lastKeys: String?
        public var more: Bool
    }
}

extension RecordsPlan: FieldPlan {
    public static var readsReplicas: Bool { true }

    public static func decode(_ row: PostgresRow) throws -> Row {
        let (found, records, lastKeys, more) = try row.decode((Bool, String?, String?, Bool).self)
        return Row(zoneFound: found, records: records, lastKeys: lastKeys, more: more)
    }

    /// The `RecordPage` JSON: the records, and a cursor when more follow.
    public func answer(_ row: Row?) throws -> String? {
        let page = try self.page(row)
        guard let field else { return page.records }
        return try field.jsonObject(typeName: "RecordPage") { child in
            switch child.name {
            case "records": return page.records
            case "cursor": return page.cursor.map { JSONValue.string($0).jsonText } ?? "null"
            default: throw QueryError.noField(child, of: "RecordPage")
            }
        }
    }

    /// The page's records (JSON text, as the rendering wrote them) and the
    /// cursor to the next page, nil when none follows.
    public func page(_ row: Row?) throws -> (records: String, cursor: String?) {
        guard let row, row.zoneFound else { throw QueryError.zoneNotFound(at: locations) }
        var cursor: String?
        if row.more, let lastKeys = row.lastKeys, case .array(let decoded)? = try? JSONValue(parsing: lastKeys) {
            cursor = Cursor(fingerprint: fingerprint, keys: decoded).encoded(secret: secret)
        }
        return (row.records ?? "[]", cursor)
    }
}
