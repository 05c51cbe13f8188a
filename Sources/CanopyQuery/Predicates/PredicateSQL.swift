import Foundation

/// Writes a checked filter as a SQL condition on `canopy.records r`. Values
/// are bound; field names appear only as SQL string literals after matching
/// `[A-Za-z][A-Za-z0-9_]{0,254}`. Every test is `coalesce(…, false)`, so a
/// missing field makes a comparison false (and its NOT true), as in CloudKit.
public enum PredicateSQL {
    public static func write(_ predicate: CheckedPredicate, _ builder: inout SQLBuilder) -> String {
        switch predicate {
        case .all: return "TRUE"
        case .and(let left, let right): return "(\(write(left, &builder)) AND \(write(right, &builder)))"
        case .or(let left, let right): return "(\(write(left, &builder)) OR \(write(right, &builder)))"
        case .not(let inner): return "(NOT \(write(inner, &builder)))"
        case .test(let test): return write(test, &builder)
        }
    }

    /// The field name as a SQL literal; the name was checked against the grammar.
    static func literal(_ name: String) -> String {
        precondition(Names.isFieldName(name), "unchecked field name")
        return "'\(name)'"
    }

    /// The SQL expression a target's values are compared as.
    static func expression(_ target: CheckedPredicate.Target) -> String {
        switch target {
        case .recordName: return "r.record_name COLLATE \"C\""
        case .creationDate: return "(extract(epoch FROM r.created_at) * 1000)::float8"
        case .modificationDate: return "(extract(epoch FROM r.modified_at) * 1000)::float8"
        case .createdBy: return "r.created_by_name COLLATE \"C\""
        case .modifiedBy: return "r.modified_by_name COLLATE \"C\""
        case .field(let name, let type):
            let key = literal(name)
            switch type {
            case .string: return "(r.fields->>\(key)) COLLATE \"C\""
            case .int64, .double: return "(r.fields->>\(key))::float8"
            case .boolean: return "(r.fields->>\(key))::boolean"
            case .timestamp: return "(r.fields->\(key)->>'value')::float8"
            case .reference: return "(r.fields->\(key)->>'recordName') COLLATE \"C\""
            case .location, .bytes, .list: return "(r.fields->\(key))"
            }
        }
    }

    static func bind(_ scalar: CheckedPredicate.Scalar, _ builder: inout SQLBuilder) -> String {
        switch scalar {
        case .string(let text): return "\(builder.bind(text))::text"
        case .number(let number), .time(let number): return "\(builder.bind(number))::float8"
        case .bool(let flag): return "\(builder.bind(flag))::boolean"
        }
    }

    static func write(_ test: CheckedPredicate.Test, _ builder: inout SQLBuilder) -> String {
        let target = expression(test.target)
        switch test.kind {
        case .compare(let comparison, let value):
            return "coalesce(\(target) \(comparison.rawValue) \(bind(value, &builder)), false)"
        case .isNil(let isNil):
            guard case .field(let name, _) = test.target else { return isNil ? "FALSE" : "TRUE" }
            return isNil ? "(NOT coalesce(r.fields ? \(literal(name)), false))" : "coalesce(r.fields ? \(literal(name)), false)"
        case .between(let low, let high):
            return "coalesce(\(target) BETWEEN \(bind(low, &builder)) AND \(bind(high, &builder)), false)"
        case .in(let values):
            let array: String
            switch values.first {
            case .string?: array = "\(builder.bind(values.map { if case .string(let text) = $0 { return text }; return "" }))::text[]"
            case .bool?: array = "\(builder.bind(values.map { if case .bool(let flag) = $0 { return flag }; return false }))::boolean[]"
            case nil: return "FALSE"
            default: array = "\(builder.bind(values.map { value -> Double in if case .number(let n) = value { return n }; if case .time(let n) = value { return n }; return 0 }))::float8[]"
            }
            return "coalesce(\(target) = ANY(\(array)), false)"
        case .listContains(let value):
            guard case .field(let name, .list(let element)) = test.target else { return "FALSE" }
            let stored: JSONValue
            switch (element, value) {
            case (.timestamp, .time(let ms)): stored = .object(["type": .string("TIMESTAMP"), "value": .double(ms)])
            case (.reference, .string(let recordName)): stored = .object(["recordName": .string(recordName)])
            case (_, .string(let text)): stored = .string(text)
            case (_, .number(let number)): stored = number == number.rounded() && abs(number) < 9e15 ? .int(Int64(number)) : .double(number)
            case (_, .bool(let flag)): stored = .bool(flag)
            case (_, .time(let ms)): stored = .double(ms)
            }
            return "coalesce(r.fields->\(literal(name)) @> \(builder.bind(json: .array([stored]))), false)"
        case .beginsWith(let prefix):
            guard let upper = upperBound(of: prefix) else { return "(\(target) IS NOT NULL)" }
            return "coalesce(\(target) >= \(builder.bind(prefix))::text AND \(target) < \(builder.bind(upper))::text, false)"
        case .selfContains(let text):
            guard text.contains(where: { $0.isLetter || $0.isNumber }) else { return "TRUE" }
            return "coalesce(canopy.search_document(r.fields) @@ canopy.search_query(\(builder.bind(text))::text), false)"
        case .distance(let latitude, let longitude, let orEqual, let kilometres):
            let lat = "\(builder.bind(latitude))::float8"
            let lon = "\(builder.bind(longitude))::float8"
            let km = "\(builder.bind(kilometres))::float8"
            let pointLat = "(\(target)->>'latitude')::float8"
            let pointLon = "(\(target)->>'longitude')::float8"
            let distance = "6371.0088 * 2 * asin(least(1, sqrt(power(sin(radians(\(pointLat) - \(lat)) / 2), 2) + cos(radians(\(lat))) * cos(radians(\(pointLat))) * power(sin(radians(\(pointLon) - \(lon)) / 2), 2))))"
            return "coalesce(\(distance) \(orEqual ? "<=" : "<") \(km), false)"
        }
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
