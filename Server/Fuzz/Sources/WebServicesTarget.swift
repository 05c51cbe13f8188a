import CanopyPlanner
import CanopyWebServices
import Foundation

/// A CloudKit Web Services request body (docs/API.md §16): its `query` read as
/// `records/query` reads it, and every field dictionary of its `fields`
/// and of each operation's record read as `records/modify` reads them
/// (answers are written by PostgreSQL, sql/functions/cloudkit_records.sql).
/// Properties:
/// - the filter as text (what a query subscription stores) never carries a
///   value (every value a `$placeholder` of `args`, every name a field
///   name), and it parses;
/// - the predicate tree the planner takes (the typed path, issue 49) checks
///   to the same predicate as the text does, or both are refused, for each
///   type its fields might have;
/// - a records plan rendering CloudKit's dictionaries builds from it.
struct WebServicesTarget: FuzzTarget {
    static let name = "web-services"

    static let secret = SigningKey(Data(repeating: 7, count: 32))

    func run(_ bytes: UnsafeRawBufferPointer) {
        guard case .object(let body)? = try? JSONValue(parsing: bytes) else { return }
        if let query = try? WebServicesQuery(body["query"]) {
            if let filter = query.filter {
                for word in filter.split(whereSeparator: { " (),".contains($0) }) {
                    let allowed = word.hasPrefix("$v") && Int(word.dropFirst(2)) != nil
                        || ["AND", "OR", "NOT", "IN", "BEGINSWITH", "CONTAINS", "ANY", "self", "==", "!=", "<", "<=", ">", ">="].contains(word)
                        || word.hasPrefix("distanceToLocation:fromLocation:")
                        || Names.isFieldName(String(word))
                    require(allowed, "a value reached a filter's text: \(word) in \(filter)")
                }
                require((try? PredicateParser.parse(filter)) != nil, "a filter the translation wrote does not parse: \(filter)")
            }
            var names = Set<String>()
            if case .object(let dictionary)? = body["query"], case .array(let filters)? = dictionary["filterBy"] {
                for case .object(let filter) in filters { if case .string(let name)? = filter["fieldName"], Names.isFieldName(name) { names.insert(name) } }
            }
            let text = query.filter.flatMap { try? PredicateParser.parse($0) } ?? .all
            for type in [FieldType.string, .int64, .double, .timestamp, .location, .list(.string), .list(.int64), .reference] {
                let schema = RecordSchema(types: Dictionary(uniqueKeysWithValues: names.map { ($0, type) }))
                let fromTree = try? PredicateChecker(schema: schema, recordType: query.recordType, args: nil).check(query.predicate)
                let fromText = try? PredicateChecker(schema: schema, recordType: query.recordType, args: .object(query.args)).check(text)
                require(fromTree == fromText, "the tree and the text of one filter check differently as \(type): \(query.filter ?? "")")
                guard fromTree != nil, let zone = try? ZoneReference(scope: .private, zoneName: "_defaultZone", ownerName: nil) else { continue }
                let records = RecordsQuery(zone: zone, recordType: query.recordType, predicate: query.predicate, sort: query.sort, limit: 10)
                let style = CloudKitRecordStyle(zoneID: .object(["zoneName": .string("_defaultZone")]), desiredKeys: nil, numbersAsStrings: true)
                _ = try? RecordsPlan(records, rendering: .cloudKit(style), schema: schema, secret: Self.secret)
            }
        }
        var dictionaries: [(String, JSONValue)] = []
        if case .object(let fields)? = body["fields"] { dictionaries += fields.map { ($0.key, $0.value) } }
        if case .array(let operations)? = body["operations"] {
            for case .object(let operation) in operations {
                if case .object(let record)? = operation["record"], case .object(let fields)? = record["fields"] {
                    dictionaries += fields.map { ($0.key, $0.value) }
                }
            }
        }
        for (name, field) in dictionaries {
            for existing in [nil, FieldType.boolean, .double, .list(.timestamp)] as [FieldType?] {
                _ = try? WebServicesFieldValue.canopyValue(field, name: name, existing: existing)
            }
        }
    }
}
