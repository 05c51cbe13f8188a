@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyPlanner
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// Random filters, compiled to SQL and run by PostgreSQL as the gateway role,
/// against the same filters evaluated in memory on the same records: the two
/// must select exactly the same records.
@Suite("Predicates: SQL against an in-memory evaluation")
struct PredicatePropertyTests {
    /// A small deterministic generator, so a failure can be replayed.
    static let words = ["apple", "Banana", "cherry", "date", "élan", "fig", "Zebra", "zoo", "a", ""]
    static let schema: RecordSchema = [
        "s": .string, "n": .int64, "d": .double, "b": .boolean, "t": .timestamp, "l": .list(.string), "loc": .location, "ln": .list(.int64),
    ]

    static func randomRecord(_ index: Int, _ g: inout SeededGenerator) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        func maybe(_ value: @autoclosure () -> JSONValue) -> JSONValue? { Int.random(in: 0..<5, using: &g) == 0 ? nil : value() }
        fields["s"] = maybe(.string([words.randomElement(using: &g)!, words.randomElement(using: &g)!].joined(separator: " ").trimmingCharacters(in: .whitespaces)))
        fields["n"] = maybe(.int(Int64.random(in: -5...5, using: &g)))
        fields["d"] = maybe(.double(Double(Int.random(in: -20...20, using: &g)) / 4))
        fields["b"] = maybe(.bool(Bool.random(using: &g)))
        fields["t"] = maybe(.object(["type": .string("TIMESTAMP"), "value": .int(1_700_000_000_000 + Int64.random(in: 0...10, using: &g) * 3_600_000)]))
        fields["l"] = maybe(.array((0..<Int.random(in: 0...3, using: &g)).map { _ in .string(words.randomElement(using: &g)!) }))
        fields["ln"] = maybe(.array((0..<Int.random(in: 1...3, using: &g)).map { _ in .int(Int64.random(in: 0...4, using: &g)) }))
        fields["loc"] = maybe(.object(["type": .string("LOCATION"), "latitude": .double(Double(Int.random(in: -60...60, using: &g))), "longitude": .double(Double(Int.random(in: -100...100, using: &g)))]))
        return fields.compactMapValues { $0 }
    }

    static func quoted(_ text: String) -> String { "'\(text)'" }

    static func randomComparison(_ g: inout SeededGenerator) -> String {
        let ops = ["==", "!=", "<", "<=", ">", ">="]
        switch Int.random(in: 0..<15, using: &g) {
        case 0: return "s \(ops.randomElement(using: &g)!) \(quoted(words.randomElement(using: &g)!))"
        case 1: return "n \(ops.randomElement(using: &g)!) \(Int.random(in: -6...6, using: &g))"
        case 2: return "d \(ops.randomElement(using: &g)!) \(Double(Int.random(in: -20...20, using: &g)) / 4)"
        case 3: return "b == \(Bool.random(using: &g) ? "TRUE" : "false")"
        case 4: return "t \(ops.randomElement(using: &g)!) \(1_700_000_000_000 + Int64.random(in: 0...10, using: &g) * 3_600_000)"
        case 5: return "n BETWEEN {\(Int.random(in: -5...0, using: &g)), \(Int.random(in: 0...5, using: &g))}"
        case 6: return "s IN {\(quoted(words.randomElement(using: &g)!)), \(quoted("apple fig"))}"
        case 7: return "l CONTAINS \(quoted(words.randomElement(using: &g)!))"
        case 8: return "s BEGINSWITH \(quoted(String(words.randomElement(using: &g)!.prefix(Int.random(in: 0...2, using: &g)))))"
        case 9: return "self CONTAINS \(quoted(["APPLE", "fig", "elan", "zoo date", "banana cherry"].randomElement(using: &g)!))"
        case 10: return "distanceToLocation:fromLocation:(loc, $here) < \(Int.random(in: 500...6000, using: &g))"
        case 11: return "\(["s", "n", "l", "loc"].randomElement(using: &g)!) \(Bool.random(using: &g) ? "==" : "!=") nil"
        case 12: return "ln CONTAINS \(Int.random(in: 0...4, using: &g))"
        case 13: return "ANY l BEGINSWITH \(quoted(String(words.randomElement(using: &g)!.prefix(Int.random(in: 0...2, using: &g)))))"
        default: return "recordName \(ops.randomElement(using: &g)!) 'r0\(Int.random(in: 10...99, using: &g))'"
        }
    }

    static func randomPredicate(_ g: inout SeededGenerator, depth: Int = 0) -> String {
        guard depth < 3 else { return randomComparison(&g) }
        switch Int.random(in: 0..<6, using: &g) {
        case 0: return "(\(randomPredicate(&g, depth: depth + 1)) AND \(randomPredicate(&g, depth: depth + 1)))"
        case 1: return "(\(randomPredicate(&g, depth: depth + 1)) OR \(randomPredicate(&g, depth: depth + 1)))"
        case 2: return "NOT \(randomPredicate(&g, depth: depth + 1))"
        default: return randomComparison(&g)
        }
    }

    @Test("400 random filters select the same records in SQL as in memory")
    func randomFilters() async throws {
        var g = SeededGenerator(state: 20261122)
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (user, _) = try await addUser("prop", on: endpoint)
        let records = (0..<150).map { (String(format: "r%03d", $0), Self.randomRecord($0, &g)) }
        let here: JSONValue = .object(["type": .string("LOCATION"), "latitude": .double(10), "longitude": .double(20)])
        let gateway = endpoint.asUser("canopy_gateway", password: nil)
        let zone = try await TestDatabase.withConnection(gateway) { connection in
            try await connection.query("BEGIN", logger: TestDatabase.logger)
            try await connection.query("SELECT set_config('canopy.user_id', \(String(user.id)), true)", logger: TestDatabase.logger)
            let zone = try await connection.texts("SELECT id::text FROM canopy.zones WHERE name = '_defaultZone'")[0]!
            let saves = JSONValue.array(records.map { .object(["recordName": .string($0.0), "recordType": .string("P"), "fields": .object($0.1)]) })
            let result = try await connection.texts("SELECT outcome::text FROM canopy.modify_records(\(Int64(zone)!), \(saves.jsonText)::jsonb, '{}', 'ALL_KEYS') WHERE (rec).id IS NULL")
            #expect(result[0]?.contains("\"errors\": []") == true, "\(result)")
            try await connection.query("COMMIT", logger: TestDatabase.logger)
            return Int64(zone)!
        }
        let filters = (0..<400).map { _ in Self.randomPredicate(&g) }
        let informative = try await TestDatabase.withConnection(gateway) { connection in
            try await connection.asUser(user.id) { connection in
                var informative = 0
                for filter in filters {
                    let checked = try PredicateChecker(schema: Self.schema, recordType: "P", args: .object(["here": here])).check(PredicateParser.parse(filter))
                    var builder = SQLBuilder()
                    let condition = PredicateSQL.write(checked, &builder)
                    let zoneBind = builder.bind(zone)
                    builder.append("SELECT r.record_name FROM canopy.records r WHERE r.zone_id = \(zoneBind) AND \(condition) ORDER BY 1")
                    let fromSQL = try await connection.texts(builder.query.postgresQuery).compactMap { $0 }
                    let inMemory = records.filter { Evaluator.matches(checked, name: $0.0, fields: $0.1) }.map(\.0).sorted()
                    #expect(fromSQL == inMemory, "filter: \(filter)")
                    if fromSQL != inMemory { break }
                    if !fromSQL.isEmpty && fromSQL.count < records.count { informative += 1 }
                }
                return informative
            }
        }
        #expect(informative > 150, "most filters select some records but not all (\(informative) of 400 did)")
    }
}

/// The filter semantics of docs/API.md §5 in plain Swift, for comparison.
enum Evaluator {
    static func matches(_ predicate: CheckedPredicate, name: String, fields: [String: JSONValue]) -> Bool {
        switch predicate {
        case .all: return true
        case .and(let left, let right): return matches(left, name: name, fields: fields) && matches(right, name: name, fields: fields)
        case .or(let left, let right): return matches(left, name: name, fields: fields) || matches(right, name: name, fields: fields)
        case .not(let inner): return !matches(inner, name: name, fields: fields)
        case .test(let test): return evaluate(test, name: name, fields: fields)
        }
    }

    static func scalar(_ value: JSONValue?, _ type: FieldType) -> CheckedPredicate.Scalar? {
        switch (type, value) {
        case (.string, .string(let text)?): return .string(text)
        case (.int64, .int(let number)?), (.double, .int(let number)?): return .number(Double(number))
        case (.double, .double(let number)?): return .number(number)
        case (.boolean, .bool(let flag)?): return .bool(flag)
        case (.timestamp, .object(let object)?):
            if case .int(let ms)? = object["value"] { return .time(Double(ms)) }
            if case .double(let ms)? = object["value"] { return .time(ms) }
            return nil
        default: return nil
        }
    }

    static func compare(_ a: CheckedPredicate.Scalar, _ b: CheckedPredicate.Scalar) -> Int? {
        switch (a, b) {
        case (.string(let x), .string(let y)):
            let xs = x.unicodeScalars.map(\.value), ys = y.unicodeScalars.map(\.value)
            return xs == ys ? 0 : (xs.lexicographicallyPrecedes(ys) ? -1 : 1)
        case (.number(let x), .number(let y)), (.time(let x), .time(let y)):
            return x == y ? 0 : (x < y ? -1 : 1)
        case (.bool(let x), .bool(let y)):
            return x == y ? 0 : (!x ? -1 : 1)
        default: return nil
        }
    }

    static func words(_ text: String) -> Set<String> {
        let folded = text.folding(options: [.diacriticInsensitive, .caseInsensitive], locale: nil)
        return Set(folded.split { !($0.isLetter || $0.isNumber) }.map(String.init))
    }

    static func evaluate(_ test: CheckedPredicate.Test, name: String, fields: [String: JSONValue]) -> Bool {
        let value: CheckedPredicate.Scalar?
        var raw: JSONValue?
        switch test.target {
        case .recordName: value = .string(name)
        case .field(let key, let type):
            raw = fields[key]
            value = scalar(raw, type)
        default: return false
        }
        switch test.kind {
        case .compare(let comparison, let other):
            guard let value, let order = compare(value, other) else { return false }
            switch comparison {
            case .equal: return order == 0
            case .notEqual: return order != 0
            case .less: return order < 0
            case .lessOrEqual: return order <= 0
            case .greater: return order > 0
            case .greaterOrEqual: return order >= 0
            }
        case .isNil(let isNil):
            guard case .field = test.target else { return !isNil }
            return (raw == nil) == isNil
        case .between(let low, let high):
            guard let value, let a = compare(value, low), let b = compare(value, high) else { return false }
            return a >= 0 && b <= 0
        case .in(let values):
            guard let value else { return false }
            return values.contains { compare(value, $0) == 0 }
        case .listContains(let element):
            guard case .array(let items)? = raw, case .field(_, .list(let elementType)) = test.target else { return false }
            return items.contains { scalar($0, elementType).map { compare($0, element) == 0 } ?? false }
        case .beginsWith(let prefix):
            guard case .string(let text)? = value else { return false }
            return text.unicodeScalars.starts(with: prefix.unicodeScalars)
        case .listMemberBeginsWith(let prefix):
            guard case .array(let items)? = raw else { return false }
            return items.contains { if case .string(let text) = $0 { text.unicodeScalars.starts(with: prefix.unicodeScalars) } else { false } }
        case .selfContains(let text, let searchable):
            var document = Set<String>()
            for (name, field) in fields where searchable?.contains(name) ?? true {
                if case .string(let s) = field { document.formUnion(words(s)) }
                if case .array(let items) = field {
                    for case .string(let s) in items { document.formUnion(words(s)) }
                }
            }
            return words(text).isSubset(of: document)
        case .distance(let latitude, let longitude, let orEqual, let kilometres):
            guard case .object(let point)? = raw, let lat = PredicateChecker.number(point["latitude"]), let lon = PredicateChecker.number(point["longitude"]) else { return false }
            func rad(_ d: Double) -> Double { d * .pi / 180 }
            let h = pow(sin(rad(lat - latitude) / 2), 2) + cos(rad(latitude)) * cos(rad(lat)) * pow(sin(rad(lon - longitude) / 2), 2)
            let distance = 6371.0088 * 2 * asin(min(1, sqrt(h)))
            return orEqual ? distance <= kilometres : distance < kilometres
        }
    }
}
