/// Types each comparison against the record type's field types and binds
/// placeholders from `args` (`$name` from an object, `%@` from a list, in
/// order). Comparing a field with a value of another type, an unknown field
/// or placeholder: INVALID_ARGUMENTS with the column.
public struct PredicateChecker {
    let schema: RecordSchema
    let recordType: String
    let args: JSONValue?

    public init(schema: RecordSchema, recordType: String, args: JSONValue?) {
        self.schema = schema
        self.recordType = recordType
        self.args = args
    }

    public func check(_ syntax: PredicateSyntax) throws -> CheckedPredicate {
        switch syntax {
        case .all:
            if schema.mode == .production, schema.fields[SystemField.recordID.rawValue]?.queryable != true {
                throw QueryError(.invalidArguments, "fetching every \(recordType) record needs ___recordID QUERYABLE in the schema (production mode)")
            }
            return .all
        case .and(let left, let right): return .and(try check(left), try check(right))
        case .or(let left, let right): return .or(try check(left), try check(right))
        case .not(let inner): return .not(try check(inner))
        case .test(let test): return .test(try check(test))
        }
    }

    /// Column 0: a predicate built as a tree (Web Services' filter
    /// dictionaries), which has no text to point into.
    func error(_ column: Int, _ message: String) -> QueryError {
        QueryError(.invalidArguments, column > 0 ? "filter, column \(column): \(message)" : "filter: \(message)")
    }

    /// The target a key names; in production mode, only when the schema
    /// declares the index `index` (QUERYABLE for filters, SORTABLE for sorts) on it.
    func target(_ key: String, column: Int, index: Index = .queryable) throws -> CheckedPredicate.Target {
        let target = try self.target(key, column: column)
        guard schema.mode == .production else { return target }
        let declared: String
        if case .field(let name, _) = target {
            declared = name
        } else {
            declared = SystemField.allCases.first { $0.queryKey == key }!.rawValue
        }
        let field = schema.fields[declared]
        let present = index == .queryable ? field?.queryable == true : field?.sortable == true
        guard present else {
            let what = declared == key ? "field \(key)" : "\(key) (\(declared))"
            throw QueryError(.invalidArguments,
                "\(index == .queryable ? "filter, column \(column)" : "sort"): \(what) of record type \(recordType) is not \(index.rawValue) in the schema (production mode: declare \(declared) \(index.rawValue) and run canopy schema apply)")
        }
        return target
    }

    /// The index a use of a field needs in production mode.
    enum Index: String {
        case queryable = "QUERYABLE", sortable = "SORTABLE"
    }

    func target(_ key: String, column: Int) throws -> CheckedPredicate.Target {
        switch key {
        case "recordName": return .recordName
        case "creationDate": return .creationDate
        case "modificationDate": return .modificationDate
        case "createdBy": return .createdBy
        case "modifiedBy": return .modifiedBy
        default:
            guard Names.isFieldName(key) else { throw error(column, "'\(key)' is not a field name") }
            guard let type = schema[key] else {
                throw error(column, "record type \(recordType) has no field \(key)")
            }
            return .field(key, type)
        }
    }

    func check(_ test: PredicateSyntax.TestSyntax) throws -> CheckedPredicate.Test {
        if case .selfContains(let operand) = test.kind {
            guard case .string(let text) = try resolve(operand) else {
                throw error(operand.column, "self CONTAINS takes a string")
            }
            let searchable = schema.searchableFields
            if searchable.isEmpty && schema.mode == .production {
                throw error(operand.column, "self CONTAINS needs a SEARCHABLE field in record type \(recordType)'s schema (production mode)")
            }
            return .init(target: .recordName, kind: .selfContains(text, fields: searchable.isEmpty ? nil : searchable))
        }
        let target = try self.target(test.key, column: test.keyColumn, index: .queryable)
        let type = target.valueType
        let name = test.key
        switch test.kind {
        case .compare(let op, let operand):
            let value = try resolve(operand)
            let comparison: CheckedPredicate.Comparison
            switch op {
            case "==", "=": comparison = .equal
            case "!=", "<>": comparison = .notEqual
            case "<": comparison = .less
            case "<=": comparison = .lessOrEqual
            case ">": comparison = .greater
            default: comparison = .greaterOrEqual
            }
            if value.isNull {
                guard comparison == .equal || comparison == .notEqual else {
                    throw error(operand.column, "NIL can only be compared with == or !=")
                }
                return .init(target: target, kind: .isNil(comparison == .equal))
            }
            if case .list = type { throw error(test.keyColumn, "\(name) is \(Article.indefinite(type.description)): use CONTAINS") }
            if [.boolean, .reference].contains(type), comparison != .equal && comparison != .notEqual {
                throw error(test.keyColumn, "\(name) is \(Article.indefinite(type.description)): compare it with == or !=")
            }
            if [.createdBy, .modifiedBy].contains(target), comparison != .equal && comparison != .notEqual {
                throw error(test.keyColumn, "\(name) is compared with == or !=")
            }
            return .init(target: target, kind: .compare(comparison, try scalar(value, for: type, name: name, column: operand.column)))
        case .between(let low, let high):
            guard [.string, .int64, .double, .timestamp].contains(type) else {
                throw error(test.keyColumn, "BETWEEN needs a STRING, number or TIMESTAMP field; \(name) is \(type)")
            }
            return .init(target: target, kind: .between(
                try scalar(try resolve(low), for: type, name: name, column: low.column),
                try scalar(try resolve(high), for: type, name: name, column: high.column)
            ))
        case .in(let operand):
            if case .list = type { throw error(test.keyColumn, "\(name) is \(Article.indefinite(type.description)): use CONTAINS") }
            guard case .array(let items) = try resolve(operand) else {
                throw error(operand.column, "IN takes a list")
            }
            return .init(target: target, kind: .in(try items.map { try scalar($0, for: type, name: name, column: operand.column) }))
        case .contains(let operand):
            guard case .list(let element) = type else {
                throw error(test.keyColumn, "CONTAINS needs a LIST field; \(name) is \(type)")
            }
            return .init(target: target, kind: .listContains(try scalar(try resolve(operand), for: element, name: name, column: operand.column)))
        case .beginsWith(let operand):
            guard type == .string, ![.createdBy, .modifiedBy].contains(target) else {
                throw error(test.keyColumn, "BEGINSWITH needs a STRING field; \(name) is \(type)")
            }
            guard case .string(let prefix) = try resolve(operand) else {
                throw error(operand.column, "BEGINSWITH takes a string")
            }
            return .init(target: target, kind: .beginsWith(prefix))
        case .anyBeginsWith(let operand):
            guard type == .list(.string) else {
                throw error(test.keyColumn, "ANY … BEGINSWITH needs a STRING_LIST field; \(name) is \(type)")
            }
            guard case .string(let prefix) = try resolve(operand) else {
                throw error(operand.column, "ANY … BEGINSWITH takes a string")
            }
            return .init(target: target, kind: .listMemberBeginsWith(prefix))
        case .distance(let location, let op, let kilometres):
            guard type == .location else {
                throw error(test.keyColumn, "distanceToLocation needs a LOCATION field; \(name) is \(type)")
            }
            guard case .object(let point) = try resolve(location),
                  let latitude = Self.number(point["latitude"]), let longitude = Self.number(point["longitude"]),
                  abs(latitude) <= 90, abs(longitude) <= 180
            else {
                throw error(location.column, "the location must be {\"type\":\"LOCATION\",\"latitude\":..,\"longitude\":..}")
            }
            guard let distance = Self.number(try resolve(kilometres)), distance >= 0 else {
                throw error(kilometres.column, "the distance must be a number of kilometres")
            }
            return .init(target: target, kind: .distance(latitude: latitude, longitude: longitude, orEqual: op == "<=", kilometres: distance))
        case .selfContains:
            fatalError("handled above")
        }
    }

    /// A literal, or the value a placeholder is bound to.
    func resolve(_ operand: PredicateSyntax.OperandSyntax) throws -> JSONValue {
        switch operand {
        case .literal(let value, _): return value
        case .null: return .null
        case .list(let items, _): return .array(try items.map(resolve))
        case .named(let name, let column):
            guard case .object(let values)? = args else {
                throw error(column, "$\(name) needs args to be an object with \(name)")
            }
            guard let value = values[name] else { throw error(column, "args has no value for $\(name)") }
            return value
        case .positional(let position, let column):
            guard case .array(let values)? = args else {
                throw error(column, "%@ needs args to be a list of values")
            }
            guard position < values.count else {
                throw error(column, "%@ number \(position + 1) has no value: args holds \(values.count)")
            }
            return values[position]
        }
    }

    public static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .int(let number)?: return Double(number)
        case .double(let number)?: return number
        default: return nil
        }
    }

    func scalar(_ value: JSONValue, for type: FieldType, name: String, column: Int) throws -> CheckedPredicate.Scalar {
        func mismatch() -> QueryError {
            error(column, "\(name) is \(type); \(value.typeName) cannot be compared with it")
        }
        switch type {
        case .string:
            guard case .string(let text) = value else { throw mismatch() }
            return .string(text)
        case .int64, .double:
            guard let number = Self.number(value) else { throw mismatch() }
            return .number(number)
        case .boolean:
            switch value {
            case .bool(let flag): return .bool(flag)
            case .int(let number) where number == 0 || number == 1: return .bool(number == 1)
            default: throw mismatch()
            }
        case .timestamp:
            if let number = Self.number(value) { return .time(number) }
            if case .object(let object) = value, object["type"] == .string("TIMESTAMP"), let number = Self.number(object["value"]) {
                return .time(number)
            }
            throw mismatch()
        case .reference:
            if case .string(let name) = value { return .string(name) }
            if case .object(let object) = value, case .string(let name)? = object["recordName"] { return .string(name) }
            throw mismatch()
        case .location, .bytes, .asset, .list:
            throw error(column, "\(name) is \(type) and cannot be compared this way")
        }
    }
}
