import Foundation

/// Writes a checked filter as a SQL condition on `canopy.records r`. Values
/// are bound; field names appear only as SQL string literals after matching
/// `[A-Za-z][A-Za-z0-9_]{0,254}`.
///
/// A missing field makes a comparison NULL, which a WHERE clause rejects as
/// it rejects false; only under NOT does the difference show, so there the
/// inner condition is `coalesce(…, false)` (a missing field's NOT is true,
/// as in CloudKit). Tests outside a NOT stay bare, so that PostgreSQL can
/// use them as index conditions.
///
/// Every field is read through a LEAKPROOF function of `migrations/0008`
/// (`canopy.number_field(r.fields, 'start')`): under row-level security
/// only leakproof conditions reach an index, and `canopy schema apply`
/// builds its indexes on the very expressions ``expression(_:qualifier:)`` writes.
public enum PredicateSQL {
    public static func write(_ predicate: CheckedPredicate, _ builder: inout SQLBuilder) -> SQL {
        switch predicate {
        case .all: return "TRUE"
        case .and(let left, let right): return "(\(write(left, &builder)) AND \(write(right, &builder)))"
        case .or(let left, let right): return "(\(write(left, &builder)) OR \(write(right, &builder)))"
        case .not(let inner): return "(NOT coalesce(\(write(inner, &builder)), false))"
        case .test(let test): return write(test, &builder)
        }
    }

    /// The field name as a SQL literal; the name was checked against the grammar.
    static func literal(_ name: String) -> SQL {
        precondition(Names.isFieldName(name), "unchecked field name")
        return SQL.literal(name)
    }

    /// The SQL expression a target's values are compared as; `qualifier`
    /// is the table alias with its dot (`r.`, or nothing in an index).
    public static func expression(_ target: CheckedPredicate.Target, qualifier: SQL = "r.") -> SQL {
        let q = qualifier
        switch target {
        case .recordName: return "\(q)record_name COLLATE \"C\""
        case .creationDate: return "canopy.epoch_ms(\(q)created_at)"
        case .modificationDate: return "canopy.epoch_ms(\(q)modified_at)"
        case .createdBy: return "\(q)created_by_name COLLATE \"C\""
        case .modifiedBy: return "\(q)modified_by_name COLLATE \"C\""
        case .field(let name, let type):
            let key = literal(name)
            switch type {
            case .string: return "canopy.string_field(\(q)fields, \(key)) COLLATE \"C\""
            case .int64, .double: return "canopy.number_field(\(q)fields, \(key))"
            case .boolean: return "canopy.boolean_field(\(q)fields, \(key))"
            case .timestamp: return "canopy.timestamp_field(\(q)fields, \(key))"
            case .reference: return "canopy.reference_field(\(q)fields, \(key)) COLLATE \"C\""
            case .location, .bytes, .asset, .list: return "(\(q)fields->\(key))"
            }
        }
    }

    /// A LIST<STRING> or LIST<REFERENCE> field as text[] (what its index holds).
    public static func textList(_ name: String, qualifier: SQL = "r.") -> SQL {
        "canopy.text_list_field(\(qualifier)fields, \(literal(name)))"
    }

    /// The full-text document of the SEARCHABLE `fields` (what their index holds).
    public static func searchDocument(_ fields: [String], qualifier: SQL = "r.") -> SQL {
        precondition(fields.allSatisfy(Names.isFieldName), "unchecked field name")
        return "canopy.search_words(\(qualifier)fields, \(SQL.literal("{" + fields.joined(separator: ",") + "}"))::text[])"
    }

    static func bind(_ scalar: CheckedPredicate.Scalar, _ builder: inout SQLBuilder) -> SQL {
        switch scalar {
        case .string(let text): return "\(builder.bind(text))::text"
        case .number(let number), .time(let number): return "\(builder.bind(number))::float8"
        case .bool(let flag): return "\(builder.bind(flag))::boolean"
        }
    }

    static func write(_ test: CheckedPredicate.Test, _ builder: inout SQLBuilder) -> SQL {
        let target = expression(test.target)
        switch test.kind {
        case .compare(let comparison, let value):
            return "(\(target) \(unescaped: comparison.rawValue) \(bind(value, &builder)))"
        case .isNil(let isNil):
            guard case .field(let name, _) = test.target else { return isNil ? "FALSE" : "TRUE" }
            return isNil ? "(NOT (r.fields ? \(literal(name))))" : "(r.fields ? \(literal(name)))"
        case .between(let low, let high):
            return "(\(target) BETWEEN \(bind(low, &builder)) AND \(bind(high, &builder)))"
        case .in(let values):
            let array: SQL
            switch values.first {
            case .string?: array = "\(builder.bind(values.map { if case .string(let text) = $0 { return text }; return "" }))::text[]"
            case .bool?: array = "\(builder.bind(values.map { if case .bool(let flag) = $0 { return flag }; return false }))::boolean[]"
            case nil: return "FALSE"
            default: array = "\(builder.bind(values.map { value -> Double in if case .number(let n) = value { return n }; if case .time(let n) = value { return n }; return 0 }))::float8[]"
            }
            return "(\(target) = ANY(\(array)))"
        case .listContains(let value):
            guard case .field(let name, .list(let element)) = test.target else { return "FALSE" }
            if element == .string || element == .reference, case .string(let text) = value {
                // On the QUERYABLE list's GIN index, when it has one.
                return "(\(textList(name)) OPERATOR(canopy.@>) ARRAY[\(builder.bind(text))::text])"
            }
            let stored: JSONValue
            switch (element, value) {
            case (.timestamp, .time(let ms)): stored = .object(["type": .string("TIMESTAMP"), "value": .double(ms)])
            case (.reference, .string(let recordName)): stored = .object(["recordName": .string(recordName)])
            case (_, .string(let text)): stored = .string(text)
            case (_, .number(let number)): stored = number == number.rounded() && abs(number) < 9e15 ? .int(Int64(number)) : .double(number)
            case (_, .bool(let flag)): stored = .bool(flag)
            case (_, .time(let ms)): stored = .double(ms)
            }
            return "(r.fields->\(literal(name)) @> \(builder.bind(json: .array([stored]))))"
        case .beginsWith(let prefix):
            guard let upper = upperBound(of: prefix) else { return "(\(target) IS NOT NULL)" }
            return "(\(target) >= \(builder.bind(prefix))::text AND \(target) < \(builder.bind(upper))::text)"
        case .listMemberBeginsWith(let prefix):
            guard case .field(let name, _) = test.target else { return "FALSE" }
            let member: SQL = "m COLLATE \"C\""
            let range: SQL
            if let upper = upperBound(of: prefix) {
                range = "\(member) >= \(builder.bind(prefix))::text AND \(member) < \(builder.bind(upper))::text"
            } else {
                range = "m IS NOT NULL"
            }
            // CASE, not AND: SQL does not promise to test the type first.
            return "(CASE WHEN jsonb_typeof(r.fields->\(literal(name))) = 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements_text(r.fields->\(literal(name))) m WHERE \(range)) END)"
        case .selfContains(let text, let fields):
            guard text.contains(where: { $0.isLetter || $0.isNumber }) else { return "TRUE" }
            let query: SQL = "canopy.search_query(\(builder.bind(text))::text)"
            guard let fields else { return "(canopy.search_document(r.fields) @@ \(query))" }
            return "(\(searchDocument(fields)) OPERATOR(canopy.@@) \(query))"
        case .distance(let latitude, let longitude, let orEqual, let kilometres):
            let distance = distance(target, latitude: latitude, longitude: longitude, &builder)
            let km: SQL = "\(builder.bind(kilometres))::float8"
            let comparison: SQL = orEqual ? "<=" : "<"
            return "(\(distance) \(comparison) \(km))"
        }
    }

    /// The great-circle distance in kilometres (haversine, mean Earth
    /// radius) from a LOCATION value to a point whose coordinates are bound;
    /// NULL where the record has no location. `NEAR` filters on it and
    /// `relativeLocation` sorts by it.
    static func distance(_ location: SQL, latitude: Double, longitude: Double, _ builder: inout SQLBuilder) -> SQL {
        let lat: SQL = "\(builder.bind(latitude))::float8"
        let lon: SQL = "\(builder.bind(longitude))::float8"
        let pointLat: SQL = "(\(location)->>'latitude')::float8"
        let pointLon: SQL = "(\(location)->>'longitude')::float8"
        let haversine: SQL = "power(sin(radians(\(pointLat) - \(lat)) / 2), 2) + cos(radians(\(lat))) * cos(radians(\(pointLat))) * power(sin(radians(\(pointLon) - \(lon)) / 2), 2)"
        // Not least(1, …): LEAST skips a NULL, and a record without the
        // location would be half the Earth away instead of nowhere.
        return "(6371.0088 * 2 * asin(CASE WHEN (\(haversine)) > 1 THEN 1 ELSE sqrt(\(haversine)) END))"
    }

    /// The smallest string above every string starting with `prefix`, in
    /// code point order (the C collation): BEGINSWITH as a range an index can use.
    public static func upperBound(of prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            var next = last.value + 1
            if next == 0xD800 { next = 0xE000 }
            if let scalar = Unicode.Scalar(next) {
                scalars.append(scalar)
                return String(String.UnicodeScalarView(scalars))
            }
        }
        return nil
    }
}
