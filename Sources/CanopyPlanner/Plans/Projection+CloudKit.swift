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
    /// Only these fields (nil: all).
    public var desiredKeys: [String]?
    public var numbersAsStrings: Bool
    /// The record type's field types, when every record answered is of it.
    public var schema: RecordSchema?
    /// How a name that has no record is answered in a lookup: the
    /// reference's code word and the request's id (`uuid`).
    public var missingCode: String
    public var requestID: String

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

extension Projection {
    /// A record of `canopy.records` aliased `r` as CloudKit Web Services'
    /// record dictionary, as JSON *text* (the optional `parent` and `share`
    /// members are appended only when the record has them, as the
    /// reference leaves them out). Keys are constants; every value that
    /// comes from the request is bound.
    static func cloudKitRecord(_ style: CloudKitRecordStyle, _ builder: inout SQLBuilder) -> SQL {
        let zoneID = builder.bind(json: style.zoneID)
        let strings: SQL = style.numbersAsStrings ? "true" : "false"
        let declared: SQL
        if let schema = style.schema {
            let types = JSONValue.object(schema.fields.mapValues { .string($0.type.description) })
            declared = "(\(builder.bind(json: types)) ->> f.key)"
        } else {
            declared = "(SELECT t.field_type FROM canopy.field_types t WHERE t.record_type = r.record_type AND t.field_name = f.key)"
        }
        var only: SQL = ""
        if let keys = style.desiredKeys {
            only = " WHERE f.key = ANY(\(builder.bind(keys))::text[])"
        }
        let fields: SQL = "(SELECT coalesce(json_object_agg(f.key, canopy.cloudkit_field(f.value, \(declared), \(strings))), '{}') FROM jsonb_each(r.fields) f\(only))"
        let base: SQL = """
            json_build_object('recordName', r.record_name, 'recordType', r.record_type, 'recordChangeTag', r.change_tag, \
            'deleted', false, 'zoneID', \(zoneID)::json, 'fields', \(fields), \
            'created', json_build_object('timestamp', floor(extract(epoch FROM r.created_at) * 1000)::int8, \
            'userRecordName', coalesce(r.created_by_name, ''), 'deviceID', 'canopy'), \
            'modified', json_build_object('timestamp', floor(extract(epoch FROM r.modified_at) * 1000)::int8, \
            'userRecordName', coalesce(r.modified_by_name, ''), 'deviceID', 'canopy'))::text
            """
        let s = builder.alias("cs")
        let share: SQL = """
            (SELECT ',"share":' || json_build_object('recordName', 'cloudkit.share.' || r.record_name, 'zoneID', \(zoneID)::json)::text \
            FROM canopy.shares \(s) WHERE \(s).root_record_id = r.id LIMIT 1)
            """
        let parent: SQL = "(',\"parent\":' || json_build_object('recordName', r.parent_name)::text)"
        return "(left(\(base), -1) || coalesce(\(share), '') || coalesce(\(parent), '') || '}')"
    }

    /// `[record, …]` (text) over the rows of `source` (aliased `r`, ordered by `order`).
    static func cloudKitRecordList(_ style: CloudKitRecordStyle, from source: SQL, order: SQL, _ builder: inout SQLBuilder) -> SQL {
        let record = cloudKitRecord(style, &builder)
        return "(SELECT '[' || coalesce(string_agg(\(record), ',' ORDER BY \(order)), '') || ']' \(source))"
    }
}
