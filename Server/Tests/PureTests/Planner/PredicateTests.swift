import CanopyPlanner
import CanopyTestSupport
import Foundation
import Testing

@Suite("The predicate language")
struct PredicateTests {
    let schema: RecordSchema = ["endDate": .timestamp, "hours": .int64, "note": .string, "tags": .list(.string), "place": .location, "done": .boolean]

    func check(_ filter: String, args: JSONValue? = nil) throws -> CheckedPredicate {
        try PredicateChecker(schema: schema, recordType: "Fast", args: args).check(PredicateParser.parse(filter))
    }

    func sql(_ filter: String, args: JSONValue? = nil) throws -> (String, Int) {
        var builder = SQLBuilder()
        let text = PredicateSQL.write(try check(filter, args: args), &builder)
        return (text.text, builder.binds.count)
    }

    @Test("parses the grammar, keywords in any case, NSPredicate spellings")
    func parses() throws {
        #expect(try PredicateParser.parse("TRUEPREDICATE") == .all)
        let tree = try PredicateParser.parse("hours > 3 and not (note beginswith 'a' OR done == true)")
        guard case .and(.test(let left), .not(.or(.test, .test))) = tree else {
            Issue.record("unexpected tree \(tree)")
            return
        }
        #expect(left.key == "hours")
        #expect(try PredicateParser.parse("hours >= 1 && hours <= 2 || !(done = FALSE)") != .all)
        #expect(try check("hours BETWEEN {1, 5} AND hours IN {1, 2, 3} AND tags CONTAINS 'x' AND note == NIL") != .all)
    }

    @Test("nesting and size are bounded: deep NOT, parentheses and lists, and too many comparisons, are errors, not a stack overflow (fuzzing found 2,000 '{' overflowing it)")
    func bounded() throws {
        func refusal(_ text: String) -> String? {
            do {
                _ = try PredicateParser.parse(text)
                return nil
            } catch let error as QueryError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        let crash = try String(contentsOf: Repository.rootURL
            .appendingPathComponent("Server/Fuzz/Regressions/predicate/nested-braces-stack-overflow"), encoding: .utf8)
        for text in [crash, "scores CONTAINS " + String(repeating: "{", count: 5000),
                     String(repeating: "NOT ", count: 5000) + "hours > 1",
                     String(repeating: "(", count: 5000) + "hours > 1" + String(repeating: ")", count: 5000)] {
            #expect(refusal(text)?.contains("more than 32 deep") == true, "\(refusal(text) ?? "parsed")")
        }
        let deepest = String(repeating: "(", count: 30) + "NOT hours IN {1, 2}" + String(repeating: ")", count: 30)  // 32 levels
        #expect(refusal(deepest) == nil)
        let many = (0..<257).map { "hours == \($0)" }.joined(separator: " OR ")
        #expect(refusal(many)?.contains("more than 256 comparisons") == true)
        #expect(refusal((0..<256).map { "hours == \($0)" }.joined(separator: " OR ")) == nil)
    }

    @Test("every fault names its column")
    func faults() {
        let cases: [(String, String)] = [
            ("hours >", "column 8"),
            ("hours ? 3", "column 7"),
            ("(hours > 3", "column 11"),
            ("hours > 3 hours", "column 11"),
            ("note == 'open", "column 9"),
            ("mood == 'x'", "column 1"),
            ("hours == 'x'", "column 10"),
            ("tags == 'x'", "column 1"),
            ("note BEGINSWITH 3", "column 17"),
            ("hours > $h", "column 9"),
            ("hours > %@ AND hours < %@", "column 24"),
            ("distanceToLocation:fromLocation:(hours, $p) < 5", "column 34"),
        ]
        for (filter, column) in cases {
            do {
                _ = try check(filter, args: .array([.int(1)]))
                Issue.record("accepted: \(filter)")
            } catch let error as QueryError {
                #expect(error.code == .invalidArguments, "\(filter)")
                #expect(error.message.contains(column), "\(filter): \(error.message)")
            } catch {
                Issue.record("\(filter): \(error)")
            }
        }
    }

    @Test("placeholders bind from args: $name from an object, %@ in order from a list")
    func placeholders() throws {
        let named = try check("hours > $min AND note == $text", args: .object(["min": .int(3), "text": .string("x")]))
        #expect(named == .and(
            .test(.init(target: .field("hours", .int64), kind: .compare(.greater, .number(3)))),
            .test(.init(target: .field("note", .string), kind: .compare(.equal, .string("x"))))
        ))
        let positional = try check("endDate > %@ AND endDate <= %@", args: .array([.int(10), .object(["type": .string("TIMESTAMP"), "value": .int(20)])]))
        #expect(positional == .and(
            .test(.init(target: .field("endDate", .timestamp), kind: .compare(.greater, .time(10)))),
            .test(.init(target: .field("endDate", .timestamp), kind: .compare(.lessOrEqual, .time(20))))
        ))
    }

    @Test("SQL binds every value; field names appear only as checked literals")
    func goldenSQL() throws {
        let (range, binds) = try sql("endDate > %@ AND endDate <= %@", args: .array([.int(1), .int(2)]))
        #expect(range == "((canopy.timestamp_field(r.fields, 'endDate') > $1::float8) AND (canopy.timestamp_field(r.fields, 'endDate') <= $2::float8))")
        #expect(binds == 2)
        let (prefix, _) = try sql("note BEGINSWITH 'ab'")
        #expect(prefix == "(canopy.string_field(r.fields, 'note') COLLATE \"C\" >= $1::text AND canopy.string_field(r.fields, 'note') COLLATE \"C\" < $2::text)")
        let (contains, _) = try sql("tags CONTAINS 'x'")
        #expect(contains == "(canopy.text_list_field(r.fields, 'tags') OPERATOR(canopy.@>) ARRAY[$1::text])")
        let (text, _) = try sql("self CONTAINS 'Crème brûlée'")
        #expect(text == "(canopy.search_document(r.fields) @@ canopy.search_query($1::text))")
        let (negated, _) = try sql("NOT hours > 3")
        #expect(negated == "(NOT coalesce((canopy.number_field(r.fields, 'hours') > $1::float8), false))", "a missing field's NOT is true")
        var builder = SQLBuilder()
        let searchable = RecordSchema(fields: ["note": FieldSchema(type: .string, searchable: true), "title": FieldSchema(type: .string)])
        let declared = PredicateSQL.write(try PredicateChecker(schema: searchable, recordType: "Fast", args: nil).check(PredicateParser.parse("self CONTAINS 'x'")), &builder)
        #expect(declared == "(canopy.search_words(r.fields, '{note}'::text[]) OPERATOR(canopy.@@) canopy.search_query($1::text))", "only SEARCHABLE fields, on their index")
        let (injected, injectedBinds) = try sql("note == \"x'); DROP TABLE canopy.records; --\"")
        #expect(!injected.contains("DROP"))
        #expect(injectedBinds == 1)
    }

    @Test("BEGINSWITH's upper bound is the next string in code point order")
    func upperBound() {
        #expect(PredicateSQL.upperBound(of: "ab") == "ac")
        #expect(PredicateSQL.upperBound(of: "a\u{10FFFF}") == "b")
        #expect(PredicateSQL.upperBound(of: "") == nil)
    }
}

@Suite("Compiling documents")
struct CompilerTests {
    @Test("asking for recordName alone builds no fields; fields(keys:) projects in SQL")
    func projections() throws {
        let names = try ParsedRequest(query: "{ lookup(scope: PRIVATE, zone: {zoneName: \"Z\"}, recordNames: [\"a\"]) { record { recordName } } }")
        let plan = try LookupPlan(try names.rootFields()[0], request: names)
        #expect(!plan.statement.sql.contains("r.fields"))
        let keys = try ParsedRequest(query: "{ lookup(scope: PRIVATE, zone: {zoneName: \"Z\"}, recordNames: [\"a\"]) { record { fields(keys: [\"x\"]) } } }")
        let keyed = try LookupPlan(try keys.rootFields()[0], request: keys)
        #expect(keyed.statement.sql.contains("jsonb_each(r.fields) f WHERE f.key = ANY("))
    }

    @Test("records: same shape, same SQL text; values only in binds")
    func shapes() throws {
        func sql(_ hours: Int) throws -> String {
            let request = try ParsedRequest(query: "query($a: JSON) { records(scope: PRIVATE, zone: {zoneName: \"Z\"}, recordType: \"Fast\", filter: \"hours > %@\", args: $a) { records { recordName } } }", variables: ["a": .array([.int(Int64(hours))])])
            return try RecordsPlan(try request.rootFields()[0], request: request, schema: ["hours": .int64], secret: SigningKey(Data(repeating: 7, count: 32))).statement.sql
        }
        #expect(try sql(1) == sql(2), "prepared statements can be reused by shape")
        #expect(!(try sql(12345)).contains("12345"))
    }

    @Test("modifyRecords orders parents before children and refuses cycles")
    func parentOrder() throws {
        let request = try ParsedRequest(query: """
            mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Z"}, save: $s) { saved { recordName } } }
            """, variables: ["s": .array([
                .object(["recordName": .string("toy"), "recordType": .string("T"), "fields": .object([:]), "parent": .string("pet")]),
                .object(["recordName": .string("pet"), "recordType": .string("T"), "fields": .object([:]), "parent": .string("person")]),
                .object(["recordName": .string("person"), "recordType": .string("T"), "fields": .object([:])]),
                .object(["recordName": .string("a"), "recordType": .string("T"), "fields": .object([:]), "parent": .string("b")]),
                .object(["recordName": .string("b"), "recordType": .string("T"), "fields": .object([:]), "parent": .string("a")]),
            ])])
        let plan = try ModifyRecordsPlan(try request.rootFields()[0], request: request)
        #expect(try plan.writeQuery.sql.contains("canopy.modify_records"))
        #expect(plan.refused.map(\.recordName).sorted() == ["a", "b"])
        #expect(plan.refused.allSatisfy { $0.code == .referenceViolation })
    }

    @Test("a cursor signed by another key, or for another query, is refused")
    func cursors() {
        let key = SigningKey(Data(repeating: 1, count: 32))
        let cursor = Cursor(fingerprint: "q1", keys: [.bool(false), .int(3), .string("r9")]).encoded(secret: key)
        #expect(Cursor.decode(cursor, secret: key, fingerprint: "q1")?.keys == [.bool(false), .int(3), .string("r9")])
        #expect(Cursor.decode(cursor, secret: key, fingerprint: "q2") == nil)
        #expect(Cursor.decode(cursor, secret: SigningKey(Data(repeating: 2, count: 32)), fingerprint: "q1") == nil)
        #expect(Cursor.decode(cursor + "x", secret: key, fingerprint: "q1") == nil)
    }
}
