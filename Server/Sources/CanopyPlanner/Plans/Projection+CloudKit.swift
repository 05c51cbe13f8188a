/// How a plan writes the records it answers. GraphQL's door asks for the
/// fields of its selection; CloudKit Web Services' door asks for the
/// reference's record dictionary. Both are written by PostgreSQL, in the
/// plan's one statement, so the gateway hands the text on with a wrapper.
public enum RecordRendering: Sendable {
    case graphQL([SelectedField], ParsedRequest)
    case cloudKit(CloudKitRecordStyle)
}

/// What a CloudKit record dictionary depends on besides the row: the zone
/// ID dictionary it carries, the request's `desiredKeys` and
/// `numbersAsStrings`, and the field types where the plan already holds
/// them (one record type's query); otherwise `canopy.field_types` says.
public struct CloudKitRecordStyle: Sendable {
    /// The zone ID dictionary each record carries.
    public var zoneID: JSONValue
    /// Each record's zone ID written from its row of the plan's `zone` CTE
    /// instead of ``zoneID``: a zone-wide query's records are of many zones.
    public var zoneIDFromZone = false
    /// The zone ID as an expression of the plan's own (JSON text), where it
    /// is known only in SQL (a resolved share's root record).
    var zoneIDSQL: SQL?
    /// A resolved share's root record: its owner's and its own id, read
    /// before the statement, by which its share is found (not by a
    /// subquery correlated with a function's rows: DECISIONS 175).
    var knownRoot: (ownerID: SQL, recordID: SQL)?
    /// The zone every record answered is in, set by the plan: its owner's
    /// id, where the statement has it as a value, finds a root's share
    /// (not `r`'s column, which Citus cannot route a correlated subquery
    /// by: DECISIONS 176).
    var zone: ZoneReference?
    /// Only these fields (nil: all).
    public var desiredKeys: [String]?
    public var numbersAsStrings: Bool
    /// The record type's field types, when every record answered is of it.
    public var schema: RecordSchema?
    /// How a name that has no record is answered in a lookup: the
    /// reference's code word and the request's id (`uuid`).
    public var missingCode: String
    public var requestID: String
    /// Records whose own `desiredKeys` replace the request's
    /// (`records/lookup`'s per record, `records/modify`'s per operation):
    /// each group's record names and keys (nil: every field).
    public var desiredKeysByRecord: [DesiredKeysGroup] = []

    /// Records answered with their own `desiredKeys`.
    public struct DesiredKeysGroup: Sendable, Equatable {
        public var names: [String]
        public var keys: [String]?

        public init(names: [String], keys: [String]?) {
            self.names = names
            self.keys = keys
        }
    }

    public init(
        zoneID: JSONValue, desiredKeys: [String]?, numbersAsStrings: Bool, schema: RecordSchema? = nil,
        missingCode: String = "NOT_FOUND", requestID: String = ""
    ) {
        self.zoneID = zoneID
        self.desiredKeys = desiredKeys
        self.numbersAsStrings = numbersAsStrings
        self.schema = schema
        self.missingCode = missingCode
        self.requestID = requestID
    }
}

extension CloudKitRecordStyle {
    /// What of the style a statement's text depends on, for a plan cache's
    /// key: `numbersAsStrings`, where each record's zone ID comes from, the
    /// missing records' code and the request's `desiredKeys` (bound once,
    /// so part of the key); nil when records have `desiredKeys` of their
    /// own (their groups of names are written into the text).
    var shapeText: String? {
        guard desiredKeysByRecord.isEmpty else { return nil }
        let keys = desiredKeys.map { $0.joined(separator: "\u{1F}") } ?? "*"
        return "\(numbersAsStrings)|\(zoneIDFromZone)|\(missingCode)|\(keys)"
    }
}

extension Projection {
    /// A record of `canopy.records` aliased `r` as CloudKit Web Services'
    /// record dictionary, as JSON *text* (the optional `parent` and `share`
    /// members are appended only when the record has them, as the
    /// reference leaves them out). Keys are constants; every value that
    /// comes from the request is bound.
    static func cloudKitRecord(_ style: CloudKitRecordStyle, _ builder: inout SQLBuilder) -> SQL {
        if !style.desiredKeysByRecord.isEmpty {
            // Each group of records with keys of its own, else the request's.
            var base = style
            base.desiredKeysByRecord = []
            var choice: SQL = "CASE"
            for group in style.desiredKeysByRecord {
                var variant = base
                variant.desiredKeys = group.keys
                choice += " WHEN r.record_name = ANY(\(builder.bind(group.names))::text[]) THEN \(cloudKitRecord(variant, &builder))"
            }
            return choice + " ELSE \(cloudKitRecord(base, &builder)) END"
        }
        let zoneID: SQL = style.zoneIDSQL ?? (style.zoneIDFromZone ? """
            (SELECT json_build_object('zoneName', zz.name, 'zoneType', CASE WHEN zz.name = '_defaultZone' THEN 'DEFAULT_ZONE' \
            ELSE 'REGULAR_CUSTOM_ZONE' END, 'ownerRecordName', zz.owner_name)::text FROM zone zz WHERE zz.id = r.zone_id)
            """ : "\(builder.bind(style.zoneID.jsonText, replaying: Self.cloudKitZoneID))::text")
        let fields = cloudKitFields(style, &builder)
        // Text, not json_build_object: half the cost of the nested calls
        // (W10, docs/BENCHMARK_NOTES.md "Issue 49"); strings through to_json.
        let stamp = { (time: SQL, user: SQL) -> SQL in
            "'{\"timestamp\":' || floor(extract(epoch FROM \(time)) * 1000)::int8::text || ',\"userRecordName\":' || to_json(coalesce(\(user), ''))::text || ',\"deviceID\":\"canopy\"}'"
        }
        // Only a record in a record-rooted share's hierarchy (share_id set)
        // can be a share's root: the probe is skipped for every other. A
        // root carries its share and the share's short GUID (issue 66: a
        // record's shortGUID is its share's).
        let s = builder.alias("cs")
        let owner = style.knownRoot?.ownerID ?? style.zone?.ownerValue(&builder) ?? "r.owner_id"
        let root = style.knownRoot?.recordID ?? "r.id"
        // Every zone at once (zoneWide): several owners' records, whose
        // share Citus cannot read in a correlated subquery; a function
        // reads each from its owner's shard (DECISIONS 183).
        let token: SQL = style.zoneIDFromZone
            ? "to_json(canopy.root_share_token(\(owner), \(root)))::text"
            : "(SELECT to_json(\(s).url_token)::text FROM canopy.shares \(s) WHERE \(s).owner_id = \(owner) AND \(s).root_record_id = \(root) LIMIT 1)"
        let share: SQL = """
            CASE WHEN r.share_id IS NOT NULL THEN ',"share":{"recordName":' || to_json('cloudkit.share.' || r.record_name)::text \
            || ',"zoneID":' || \(zoneID) || '},"shortGUID":{"value":' || \(token) || '}' END
            """
        return """
            ('{"recordName":' || to_json(r.record_name)::text || ',"recordType":' || to_json(r.record_type)::text \
            || ',"recordChangeTag":' || to_json(r.change_tag)::text || ',"deleted":false,"zoneID":' || \(zoneID) \
            || ',"fields":' || \(fields) || ',"created":' || \(stamp("r.created_at", "r.created_by_name")) \
            || ',"modified":' || \(stamp("r.modified_at", "r.modified_by_name")) \
            || coalesce(\(share), '') || coalesce(',"parent":{"recordName":' || to_json(r.parent_name)::text || '}', '') || '}')
            """
    }

    /// The zone ID dictionary a cached plan binds again: a plan whose
    /// check did not record one (a records query's, not cached today)
    /// does not fit, and is planned anew rather than answer `"zoneID":`.
    @Sendable static func cloudKitZoneID(_ values: PlanValues) throws -> String {
        guard !values.cloudKitZoneID.isEmpty else { throw StatementTemplate.Mismatch() }
        return values.cloudKitZoneID
    }

    /// A record's `fields` as CloudKit's typed field values, JSON text. With
    /// the record type's schema, each declared field is written inline with
    /// its tag (a copy of its value for most types: no function call, no
    /// row per field; an absent field's NULL drops out of `concat_ws`), and
    /// only fields the schema does not know go through
    /// `canopy.cloudkit_field`; without one (a lookup), every field does.
    static func cloudKitFields(_ style: CloudKitRecordStyle, _ builder: inout SQLBuilder) -> SQL {
        let strings: SQL = style.numbersAsStrings ? "true" : "false"
        let wanted = style.desiredKeys.map(Set.init)
        guard let schema = style.schema else {
            var only: SQL = ""
            if let keys = style.desiredKeys { only = " WHERE f.key = ANY(\(builder.bind(keys))::text[])" }
            // The declared type joined, not a subquery in the argument: an
            // argument with a subquery used more than once in the body
            // keeps PostgreSQL from inlining the function (150 µs a field).
            return """
                ('{' || coalesce((SELECT string_agg(to_json(f.key)::text || ':' || canopy.cloudkit_field(f.value, t.field_type, \(strings)), ',') \
                FROM jsonb_each(r.fields) f LEFT JOIN canopy.field_types t ON t.record_type = r.record_type AND t.field_name = f.key\(only)), '') || '}')
                """
        }
        var parts: [SQL] = []
        let names = schema.fields.keys.filter { Names.isFieldName($0) && (wanted?.contains($0) ?? true) }.sorted()
        for name in names {
            let value: SQL = "(r.fields->\(SQL.literal(name)))"
            let inline: (SQL, String)?
            switch schema.fields[name]!.type {
            case .string: inline = ("\(value)::text", "STRING")
            case .int64 where !style.numbersAsStrings: inline = ("\(value)::text", "INT64")
            case .double where !style.numbersAsStrings: inline = ("\(value)::text", "DOUBLE")
            case .boolean where !style.numbersAsStrings:
                inline = ("CASE \(value) WHEN 'true'::jsonb THEN '1' WHEN 'false'::jsonb THEN '0' END", "INT64")
            case .timestamp: inline = ("(\(value)->'value')::text", "TIMESTAMP")
            case .bytes: inline = ("(\(value)->'base64')::text", "BYTES")
            case .location: inline = ("(\(value) - 'type')::text", "LOCATION")
            case .list(.string): inline = ("\(value)::text", "STRING_LIST")
            case .list(.int64) where !style.numbersAsStrings: inline = ("\(value)::text", "INT64_LIST")
            case .list(.double) where !style.numbersAsStrings: inline = ("\(value)::text", "DOUBLE_LIST")
            default: inline = nil
            }
            if let (expression, tag) = inline {
                parts.append("\(SQL.literal("\"\(name)\":{\"value\":")) || \(expression) || \(SQL.literal(",\"type\":\"\(tag)\"}"))")
            } else {
                let declared = SQL.literal(schema.fields[name]!.type.description)
                parts.append("\(SQL.literal("\"\(name)\":")) || canopy.cloudkit_field(\(value), \(declared), \(strings))")
            }
        }
        // Fields the schema the plan holds does not know (saved since it was
        // read): the generic path, so nothing is left out. With desiredKeys
        // they are known now; without, a record that has none costs one
        // comparison.
        if let wanted {
            for name in wanted.subtracting(names).sorted() where Names.isFieldName(name) {
                parts.append("\(SQL.literal("\"\(name)\":")) || canopy.cloudkit_field(r.fields->\(SQL.literal(name)), NULL, \(strings))")
            }
        } else {
            let declared: SQL = "\(builder.bind(names))::text[]"
            parts.append("""
                CASE WHEN (r.fields - \(declared)) <> '{}'::jsonb THEN (SELECT string_agg(to_json(f.key)::text || ':' \
                || canopy.cloudkit_field(f.value, NULL, \(strings)), ',') FROM jsonb_each(r.fields - \(declared)) f) END
                """)
        }
        return "('{' || concat_ws(',', \(parts.joined(separator: ", "))) || '}')"
    }

    /// `[record, …]` (text) over the rows of `source` (aliased `r`, ordered by `order`).
    static func cloudKitRecordList(_ style: CloudKitRecordStyle, from source: SQL, order: SQL, _ builder: inout SQLBuilder) -> SQL {
        let record = cloudKitRecord(style, &builder)
        return "(SELECT '[' || coalesce(string_agg(\(record), ',' ORDER BY \(order)), '') || ']' \(source))"
    }
}
