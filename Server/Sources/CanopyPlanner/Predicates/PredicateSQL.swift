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
    /// `at` finds, in another request's values, the predicate written here
    /// (a recording builder keeps it to bind that request's values; the
    /// root's default is the plan's predicate).
    public static func write(
        _ predicate: CheckedPredicate, _ builder: inout SQLBuilder,
        at path: @escaping @Sendable (PlanValues) throws -> CheckedPredicate = { $0.predicate }
    ) -> SQL {
        switch predicate {
        case .all: return "TRUE"
        case .and(let left, let right):
            let l = write(left, &builder, at: { guard case .and(let l, _) = try path($0) else { throw StatementTemplate.Mismatch() }; return l })
            let r = write(right, &builder, at: { guard case .and(_, let r) = try path($0) else { throw StatementTemplate.Mismatch() }; return r })
            return "(\(l) AND \(r))"
        case .or(let left, let right):
            let l = write(left, &builder, at: { guard case .or(let l, _) = try path($0) else { throw StatementTemplate.Mismatch() }; return l })
            let r = write(right, &builder, at: { guard case .or(_, let r) = try path($0) else { throw StatementTemplate.Mismatch() }; return r })
            return "(\(l) OR \(r))"
        case .not(let inner):
            let i = write(inner, &builder, at: { guard case .not(let i) = try path($0) else { throw StatementTemplate.Mismatch() }; return i })
            return "(NOT coalesce(\(i), false))"
        case .test(let test):
            return write(test, &builder) { guard case .test(let test) = try path($0) else { throw StatementTemplate.Mismatch() }; return test.kind }
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

    /// A scalar bound as its type; `read` finds the same scalar in another
    /// request's values.
    static func bind(
        _ scalar: CheckedPredicate.Scalar, _ builder: inout SQLBuilder,
        replaying read: @escaping @Sendable (PlanValues) throws -> CheckedPredicate.Scalar
    ) -> SQL {
        switch scalar {
        case .string(let text):
            return "\(builder.bind(text, replaying: { guard case .string(let t) = try read($0) else { throw StatementTemplate.Mismatch() }; return t }))::text"
        case .number(let number), .time(let number):
            return "\(builder.bind(number, replaying: { values in switch try read(values) { case .number(let n), .time(let n): return n; default: throw StatementTemplate.Mismatch() } }))::float8"
        case .bool(let flag):
            return "\(builder.bind(flag, replaying: { guard case .bool(let b) = try read($0) else { throw StatementTemplate.Mismatch() }; return b }))::boolean"
        }
    }

    /// `kind` finds the test's kind in another request's values.
    static func write(
        _ test: CheckedPredicate.Test, _ builder: inout SQLBuilder,
        kind: @escaping @Sendable (PlanValues) throws -> CheckedPredicate.Test.Kind
    ) -> SQL {
        let target = expression(test.target)
        let mismatch = StatementTemplate.Mismatch()
        switch test.kind {
        case .compare(let comparison, let value):
            let bound = bind(value, &builder) { guard case .compare(_, let v) = try kind($0) else { throw mismatch }; return v }
            return "(\(target) \(unescaped: comparison.rawValue) \(bound))"
        case .isNil(let isNil):
            guard case .field(let name, _) = test.target else { return isNil ? "FALSE" : "TRUE" }
            return isNil ? "(NOT (r.fields ? \(literal(name))))" : "(r.fields ? \(literal(name)))"
        case .between(let low, let high):
            let lower = bind(low, &builder) { guard case .between(let v, _) = try kind($0) else { throw mismatch }; return v }
            let upper = bind(high, &builder) { guard case .between(_, let v) = try kind($0) else { throw mismatch }; return v }
            return "(\(target) BETWEEN \(lower) AND \(upper))"
        case .in(let values):
            let array: SQL
            let list: @Sendable (PlanValues) throws -> [CheckedPredicate.Scalar] = { guard case .in(let v) = try kind($0) else { throw mismatch }; return v }
            switch values.first {
            case .string?: array = "\(builder.bind(Self.texts(values), replaying: { Self.texts(try list($0)) }))::text[]"
            case .bool?: array = "\(builder.bind(Self.flags(values), replaying: { Self.flags(try list($0)) }))::boolean[]"
            case nil: return "FALSE"
            default: array = "\(builder.bind(Self.numbers(values), replaying: { Self.numbers(try list($0)) }))::float8[]"
            }
            return "(\(target) = ANY(\(array)))"
        case .listContains(let value):
            guard case .field(let name, .list(let element)) = test.target else { return "FALSE" }
            if element == .string || element == .reference, case .string(let text) = value {
                // On the QUERYABLE list's GIN index, when it has one.
                let bound = builder.bind(text) { guard case .listContains(.string(let t)) = try kind($0) else { throw mismatch }; return t }
                return "(\(textList(name)) OPERATOR(canopy.@>) ARRAY[\(bound)::text])"
            }
            let stored = Self.stored(value, element: element)
            let bound = builder.bind(json: .array([stored])) { values in
                guard case .listContains(let value) = try kind(values) else { throw mismatch }
                return .array([Self.stored(value, element: element)])
            }
            return "(r.fields->\(literal(name)) @> \(bound))"
        case .beginsWith(let prefix):
            guard let upper = upperBound(of: prefix) else { return "(\(target) IS NOT NULL)" }
            let prefixRead: @Sendable (PlanValues) throws -> String = { guard case .beginsWith(let p) = try kind($0) else { throw mismatch }; return p }
            let low = builder.bind(prefix, replaying: prefixRead)
            let high = builder.bind(upper, replaying: { guard let upper = upperBound(of: try prefixRead($0)) else { throw mismatch }; return upper })
            return "(\(target) >= \(low)::text AND \(target) < \(high)::text)"
        case .listMemberBeginsWith(let prefix):
            guard case .field(let name, _) = test.target else { return "FALSE" }
            let member: SQL = "m COLLATE \"C\""
            let range: SQL
            if let upper = upperBound(of: prefix) {
                let prefixRead: @Sendable (PlanValues) throws -> String = { guard case .listMemberBeginsWith(let p) = try kind($0) else { throw mismatch }; return p }
                let low = builder.bind(prefix, replaying: prefixRead)
                let high = builder.bind(upper, replaying: { guard let upper = upperBound(of: try prefixRead($0)) else { throw mismatch }; return upper })
                range = "\(member) >= \(low)::text AND \(member) < \(high)::text"
            } else {
                range = "m IS NOT NULL"
            }
            // CASE, not AND: SQL does not promise to test the type first.
            return "(CASE WHEN jsonb_typeof(r.fields->\(literal(name))) = 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements_text(r.fields->\(literal(name))) m WHERE \(range)) END)"
        case .selfContains(let text, let fields):
            guard Self.hasWords(text) else { return "TRUE" }
            let bound = builder.bind(text) { guard case .selfContains(let t, _) = try kind($0), Self.hasWords(t) else { throw mismatch }; return t }
            let query: SQL = "canopy.search_query(\(bound)::text)"
            guard let fields else { return "(canopy.search_document(r.fields) @@ \(query))" }
            return "(\(searchDocument(fields)) OPERATOR(canopy.@@) \(query))"
        case .distance(let latitude, let longitude, let orEqual, let kilometres):
            let distance = distance(
                target, latitude: latitude, longitude: longitude, &builder,
                replaying: { guard case .distance(let lat, let lon, _, _) = try kind($0) else { throw mismatch }; return (lat, lon) }
            )
            let km: SQL = "\(builder.bind(kilometres, replaying: { guard case .distance(_, _, _, let km) = try kind($0) else { throw mismatch }; return km }))::float8"
            let comparison: SQL = orEqual ? "<=" : "<"
            return "(\(distance) \(comparison) \(km))"
        }
    }

    /// A LIST member as the record's fields hold it, to match with `@>`.
    static func stored(_ value: CheckedPredicate.Scalar, element: FieldType) -> JSONValue {
        switch (element, value) {
        case (.timestamp, .time(let ms)): return .object(["type": .string("TIMESTAMP"), "value": .double(ms)])
        case (.reference, .string(let recordName)): return .object(["recordName": .string(recordName)])
        case (_, .string(let text)): return .string(text)
        case (_, .number(let number)): return number == number.rounded() && abs(number) < 9e15 ? .int(Int64(number)) : .double(number)
        case (_, .bool(let flag)): return .bool(flag)
        case (_, .time(let ms)): return .double(ms)
        }
    }

    /// Whether `self CONTAINS` text has a word to look for (else it matches all).
    static func hasWords(_ text: String) -> Bool {
        text.contains(where: { $0.isLetter || $0.isNumber })
    }

    static func texts(_ values: [CheckedPredicate.Scalar]) -> [String] {
        values.map { if case .string(let text) = $0 { return text }; return "" }
    }

    static func flags(_ values: [CheckedPredicate.Scalar]) -> [Bool] {
        values.map { if case .bool(let flag) = $0 { return flag }; return false }
    }

    static func numbers(_ values: [CheckedPredicate.Scalar]) -> [Double] {
        values.map { value -> Double in if case .number(let n) = value { return n }; if case .time(let n) = value { return n }; return 0 }
    }

    /// The great-circle distance in kilometres (haversine, mean Earth
    /// radius) from a LOCATION value to a point whose coordinates are bound;
    /// NULL where the record has no location. `NEAR` filters on it and
    /// `relativeLocation` sorts by it.
    static func distance(
        _ location: SQL, latitude: Double, longitude: Double, _ builder: inout SQLBuilder,
        replaying point: @escaping @Sendable (PlanValues) throws -> (Double, Double)
    ) -> SQL {
        let lat: SQL = "\(builder.bind(latitude, replaying: { try point($0).0 }))::float8"
        let lon: SQL = "\(builder.bind(longitude, replaying: { try point($0).1 }))::float8"
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
