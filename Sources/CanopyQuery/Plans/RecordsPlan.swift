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
    }

    public let query: SQLStatement
    public let limit: Int
    let field: SelectedField
    let fingerprint: String

    /// The record type a `records` field asks for, to fetch its schema first.
    public static func recordType(of field: SelectedField, request: ParsedRequest) throws -> String {
        let arguments = request.arguments(of: field)
        let type = try arguments.requiredString("recordType")
        guard Names.isRecordType(type) else {
            throw arguments.invalid("recordType", "recordType '\(type)' must be a letter followed by letters, digits or _")
        }
        return type
    }

    public init(_ field: SelectedField, request: ParsedRequest, schema: RecordSchema, secret: SigningKey) throws {
        let arguments = request.arguments(of: field)
        let scope = try DatabaseScope.read(arguments)
        let zone = try ZoneReference(scope: scope, in: arguments)
        let recordType = try Self.recordType(of: field, request: request)
        let limit = try arguments.limit(default: 100, maximum: Self.maximumLimit)
        let args = try arguments.value("args")
        let filterText = try arguments.string("filter")
        let checker = PredicateChecker(schema: schema, recordType: recordType, args: args)
        let predicate: CheckedPredicate
        do {
            predicate = try filterText.map { try checker.check(try PredicateParser.parse($0)) } ?? .all
        } catch var error as QueryError {
            error.locations = arguments.location("filter")
            throw error
        }
        let sortKeys = try Self.sortKeys(arguments, checker: checker)
        self.limit = limit
        self.field = field
        fingerprint = Cursor.fingerprint([
            scope.rawValue, zone.zoneName, zone.ownerName ?? "", recordType, filterText ?? "", args?.jsonText ?? "",
            sortKeys.map { "\($0.target)\($0.descending)" }.joined(separator: ","),
        ])
        var after: Cursor?
        if let text = try arguments.string("cursor") {
            guard let cursor = Cursor.decode(text, secret: secret, fingerprint: fingerprint), cursor.keys.count == sortKeys.count * 2 + 1 else {
                throw arguments.invalid("cursor", "the cursor is not one this server issued for this query")
            }
            after = cursor
        }

        var builder = SQLBuilder()
        let cte = zone.cte(&builder)
        let type = builder.bind(recordType)
        let filter = PredicateSQL.write(predicate, &builder)
        var order: [String] = []
        var keys: [String] = []
        for key in sortKeys {
            let expression = PredicateSQL.expression(key.target)
            order.append("(\(expression)) IS NULL")
            order.append("\(expression) \(key.descending ? "DESC" : "ASC")")
            keys.append("(\(expression)) IS NULL")
            keys.append(expression)
        }
        order.append("r.record_name COLLATE \"C\" ASC")
        keys.append("r.record_name")
        let keyset = try after.map { try Self.keyset(sortKeys, after: $0.keys, &builder) } ?? "TRUE"
        let records = try field.children.first { $0.name == "records" }.map {
            try Projection.record($0.children, request: request, &builder)
        } ?? "NULL::json"
        let limitBind = builder.bind(limit)
        builder.append("""
            WITH \(cte), page AS (SELECT r.*, row_number() OVER (ORDER BY \(order.joined(separator: ", "))) AS canopy_ord, \
            json_build_array(\(keys.joined(separator: ", "))) AS canopy_keys \
            FROM canopy.records r WHERE r.zone_id = (SELECT id FROM zone) AND r.record_type = \(type) \
            AND \(filter) AND \(keyset) ORDER BY \(order.joined(separator: ", ")) LIMIT \(limitBind)::int8 + 1) \
            SELECT EXISTS (SELECT 1 FROM zone), \
            (SELECT coalesce(json_agg(\(records) ORDER BY r.canopy_ord), '[]') FROM page r WHERE r.canopy_ord <= \(limitBind)::int8)::text, \
            (SELECT r.canopy_keys FROM page r WHERE r.canopy_ord = \(limitBind)::int8)::text, \
            (SELECT count(*) FROM page) > \(limitBind)::int8
            """)
        query = builder.query
    }

    static func sortKeys(_ arguments: Arguments, checker: PredicateChecker) throws -> [SortKey] {
        let value = try arguments.value("sort")
        var items: [JSONValue] = []
        switch value {
        case nil, .null?: return []
        case .array(let list)?: items = list
        case let single?: items = [single]
        }
        return try items.map { item in
            guard case .object(let sort) = item, case .string(let name)? = sort["field"] else {
                throw arguments.invalid("sort", "each sort is {field, direction}")
            }
            let direction = sort["direction"]?.stringValue ?? "ASC"
            guard direction == "ASC" || direction == "DESC" else {
                throw arguments.invalid("sort", "sort direction must be ASC or DESC")
            }
            let target: CheckedPredicate.Target
            do {
                target = try checker.target(name, column: 0)
            } catch {
                throw arguments.invalid("sort", "cannot sort by \(name): record type \(checker.recordType) has no such field")
            }
            switch target.valueType {
            case .list, .location, .bytes: throw arguments.invalid("sort", "cannot sort by \(name), a \(target.valueType)")
            default: return SortKey(target: target, descending: direction == "DESC")
            }
        }
    }

    /// Rows strictly after the cursor's keys in the sort order.
    static func keyset(_ sortKeys: [SortKey], after keys: [JSONValue], _ builder: inout SQLBuilder) throws -> String {
        guard case .string(let lastName) = keys.last! else { throw QueryError(.invalidArguments, "the cursor is damaged") }
        var condition = "r.record_name COLLATE \"C\" > \(builder.bind(lastName))::text"
        for (index, key) in sortKeys.enumerated().reversed() {
            let expression = PredicateSQL.expression(key.target)
            guard case .bool(let wasNull) = keys[index * 2] else { throw QueryError(.invalidArguments, "the cursor is damaged") }
            let value = keys[index * 2 + 1]
            let nullFlag = "((\(expression)) IS NULL)"
            if wasNull {
                // After a missing value come only later missing values (by the next keys).
                condition = "(\(nullFlag) AND \(condition))"
                continue
            }
            let bound: String
            switch (key.target.valueType, value) {
            case (.string, .string(let text)), (.reference, .string(let text)): bound = "\(builder.bind(text))::text"
            case (.boolean, .bool(let flag)): bound = "\(builder.bind(flag))::boolean"
            case (_, .int(let number)): bound = "\(builder.bind(Double(number)))::float8"
            case (_, .double(let number)): bound = "\(builder.bind(number))::float8"
            default: throw QueryError(.invalidArguments, "the cursor is damaged")
            }
            let strictlyAfter = key.descending ? "\(expression) < \(bound)" : "\(expression) > \(bound)"
            condition = "(\(nullFlag) OR coalesce(\(strictlyAfter), false) OR (coalesce(\(expression) = \(bound), false) AND \(condition)))"
        }
        return condition
    }

    /// The `RecordPage` JSON: the records, and a cursor when more follow.
    public func response(records: String?, lastKeys: String?, more: Bool, secret: SigningKey) throws -> String {
        field.jsonObject(typeName: "RecordPage") { child in
            switch child.name {
            case "records":
                return records ?? "[]"
            default:   // cursor
                guard more, let lastKeys, let decoded = try? JSONDecoder().decode([JSONValue].self, from: Data(lastKeys.utf8)) else {
                    return "null"
                }
                return JSONValue.string(Cursor(fingerprint: fingerprint, keys: decoded).encoded(secret: secret)).jsonText
            }
        }
    }
}
