@testable import CanopyPlanner
import Foundation
import Testing

/// The plan cache's contract in the planner (issue 51): a statement made
/// for one request and replayed with another request's values, when the two
/// have the same shape, is byte for byte the statement planned anew for the
/// second; values never reach the cached text; and what changes the text
/// changes the shape.
@Suite("Plan templates: replayed statements equal new plans")
struct PlanTemplateTests {
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58476d1ce4e5b9
            z = (z ^ (z >> 27)) &* 0x94d049bb133111eb
            return z ^ (z >> 31)
        }
    }

    static let schema: RecordSchema = [
        "s": .string, "n": .int64, "d": .double, "b": .boolean, "t": .timestamp, "l": .list(.string), "loc": .location, "ln": .list(.int64),
    ]
    static let secret = SigningKey(Data(repeating: 7, count: 32))
    static let words = ["apple", "Banana", "cherry", "", "a", "!!", "zoo date", "\u{10FFFF}"]

    /// A comparison with a placeholder, and a random value of the kind it takes.
    static func randomTest(_ g: inout SeededGenerator) -> (text: String, value: @Sendable (inout SeededGenerator) -> JSONValue) {
        let ops = ["==", "!=", "<", "<=", ">", ">="]
        let word: @Sendable (inout SeededGenerator) -> JSONValue = { .string(words.randomElement(using: &$0)!) }
        switch Int.random(in: 0..<12, using: &g) {
        case 0: return ("s \(ops.randomElement(using: &g)!) %@", { g in Int.random(in: 0..<6, using: &g) == 0 ? .null : word(&g) })
        case 1: return ("n \(ops.randomElement(using: &g)!) %@", { .int(Int64.random(in: -6...6, using: &$0)) })
        case 2: return ("d \(ops.randomElement(using: &g)!) %@", { .double(Double(Int.random(in: -20...20, using: &$0)) / 4) })
        case 3: return ("b == %@", { .bool(Bool.random(using: &$0)) })
        case 4: return ("t > %@", { .object(["type": .string("TIMESTAMP"), "value": .int(1_700_000_000_000 + Int64.random(in: 0...10, using: &$0))]) })
        case 5: return ("n BETWEEN %@", { g in .array([.int(Int64.random(in: -5...0, using: &g)), .int(Int64.random(in: 0...5, using: &g))]) })
        case 6: return ("s IN %@", { g in .array((0..<Int.random(in: 0...3, using: &g)).map { _ in word(&g) }) })
        case 7: return ("l CONTAINS %@", word)
        case 8: return ("s BEGINSWITH %@", word)
        case 9: return ("self CONTAINS %@", word)
        case 10: return ("distanceToLocation:fromLocation:(loc, %@) < 500", { g in
            .object(["type": .string("LOCATION"), "latitude": .double(Double(Int.random(in: -60...60, using: &g))), "longitude": .double(Double(Int.random(in: -90...90, using: &g)))])
        })
        default: return ("ANY l BEGINSWITH %@", word)
        }
    }

    /// A filter of up to four placeholder tests, and a maker of its args.
    static func randomFilter(_ g: inout SeededGenerator) -> (text: String, args: @Sendable (inout SeededGenerator) -> JSONValue) {
        let tests = (0..<Int.random(in: 1...4, using: &g)).map { _ in randomTest(&g) }
        var text = tests[0].text
        for test in tests.dropFirst() {
            switch Int.random(in: 0..<3, using: &g) {
            case 0: text = "(\(text)) AND \(test.text)"
            case 1: text = "(\(text)) OR \(test.text)"
            default: text = "NOT (\(text)) AND \(test.text)"
            }
        }
        let makers = tests.map(\.value)
        return (text, { g in .array(makers.map { $0(&g) }) })
    }

    static func document(filter: String, sort: String) -> String {
        """
        query($a: JSON, $c: String, $z: String!) { records(scope: PRIVATE, zone: {zoneName: $z}, recordType: "P", \
        filter: "\(filter)", args: $a, sort: \(sort), limit: 5, cursor: $c) { records { recordName fields } cursor } }
        """
    }

    /// The request's check, or nil when its values are refused (the same refusal on both paths).
    static func checked(_ document: String, _ variables: [String: JSONValue]) throws -> (ParsedRequest, SelectedField, RecordsPlan.Checked)? {
        try? checkedOrRefused(document, variables)
    }

    static func checkedOrRefused(_ document: String, _ variables: [String: JSONValue]) throws -> (ParsedRequest, SelectedField, RecordsPlan.Checked) {
        let request = try ParsedRequest(query: document, variables: variables)
        let field = try request.rootFields()[0]
        return (request, field, try RecordsPlan.check(field, request: request, schema: schema, secret: secret))
    }

    /// A cursor after a page whose last keys are `keys`, for this request.
    static func cursor(_ checked: RecordsPlan.Checked, keys: [JSONValue]) -> String {
        Cursor(fingerprint: checked.fingerprint, keys: keys).encoded(secret: secret)
    }

    @Test("600 random requests: a template replayed with another request of its shape is that request's new plan, byte for byte")
    func replayEqualsNewPlan() throws {
        var g = SeededGenerator(state: 20261127)
        var compared = 0, shapes = 0
        let sorts = ["[]", "[{field: \"n\"}]", "[{field: \"s\", direction: DESC}]", "[{field: \"n\"}, {field: \"s\"}]",
                     "[{field: \"loc\", relativeLocation: {latitude: 1, longitude: 2}}]"]
        for round in 0..<600 {
            let filter = Self.randomFilter(&g)
            let sortIndex = Int.random(in: 0..<sorts.count, using: &g)
            let document = Self.document(filter: filter.text, sort: sorts[sortIndex])
            let first = ["a": filter.args(&g), "z": JSONValue.string("Zone\(round)")]
            guard let (requestA, fieldA, checkedA) = try Self.checked(document, first) else { continue }
            let planA = try RecordsPlan(checkedA, field: fieldA, request: requestA, secret: Self.secret, recording: true)
            let template = try #require(planA.template)
            #expect(planA.statement.sql == template.sql)
            // The template replayed with its own request's values is its own statement.
            #expect(try template.statement(for: checkedA.values) == planA.statement)
            for _ in 0..<3 {
                var second: [String: JSONValue] = ["a": filter.args(&g), "z": .string("Other\(Int.random(in: 0...99, using: &g))")]
                if Bool.random(using: &g) {
                    // A later page: a cursor of this query's shape of keys.
                    let keys: [JSONValue]
                    switch sortIndex {
                    case 0: keys = [.string("r\(Int.random(in: 0...9, using: &g))")]
                    case 1, 4: keys = Bool.random(using: &g) ? [.bool(true), .null, .string("r1")] : [.bool(false), .int(Int64.random(in: -9...9, using: &g)), .string("r2")]
                    case 2: keys = Bool.random(using: &g) ? [.bool(true), .null, .string("r1")] : [.bool(false), .string(Self.words.randomElement(using: &g)!), .string("r3")]
                    default: keys = [.bool(Bool.random(using: &g)), .double(1.5), .bool(false), .string("x"), .string("r4")]
                    }
                    guard let (_, _, probe) = try Self.checked(document, second) else { continue }
                    second["c"] = .string(Self.cursor(probe, keys: keys))
                }
                guard let (requestB, fieldB, checkedB) = try Self.checked(document, second) else { continue }
                let coldB = try? RecordsPlan(checkedB, field: fieldB, request: requestB, secret: Self.secret)
                guard checkedB.shape == checkedA.shape else {
                    shapes += 1
                    continue
                }
                let replayed = try RecordsPlan(checkedB, field: fieldB, secret: Self.secret, template: template)
                #expect(replayed.statement == coldB?.statement, "filter \(filter.text) sort \(sorts[sortIndex]) \(first) then \(second)")
                compared += 1
            }
        }
        #expect(compared > 300, "most pairs share a shape (\(compared) compared, \(shapes) of another shape)")
        #expect(shapes > 100, "values that change the text change the shape (\(shapes))")
    }

    @Test("values never reach a template's text: sentinels in every variable appear only among its binds")
    func valuesAreOnlyBound() throws {
        let document = """
            query($a: JSON, $z: String!, $o: String, $l: Int, $c: String) { records(scope: PRIVATE, zone: {zoneName: $z, ownerName: $o}, recordType: "P", \
            filter: "s == %@ AND n > %@ AND s BEGINSWITH %@ AND self CONTAINS %@ AND s IN %@", args: $a, sort: [{field: "n"}], limit: $l, cursor: $c) \
            { records { recordName } cursor } }
            """
        let variables: [String: JSONValue] = [
            "a": .array([.string("SENTINELone"), .int(987654321), .string("SENTINELtwo"), .string("SENTINELthree"), .array([.string("SENTINELfour")])]),
            "z": .string("SENTINELzone"), "o": .string("SENTINELowner"), "l": .int(37),
        ]
        let (request, field, checked) = try #require(try Self.checked(document, variables))
        let plan = try RecordsPlan(checked, field: field, request: request, secret: Self.secret, recording: true)
        let template = try #require(plan.template)
        #expect(!template.sql.contains("SENTINEL") && !template.sql.contains("987654321") && !template.sql.contains("37"))
        var other = variables
        other["a"] = .array([.string("x"), .int(1), .string("y"), .string("w"), .array([.string("v")])])
        other["z"] = .string("Z2"); other["o"] = .string("O2"); other["l"] = .int(3)
        let (requestB, fieldB, checkedB) = try #require(try Self.checked(document, other))
        #expect(checkedB.shape == checked.shape)
        let replayed = try template.statement(for: checkedB.values)
        #expect(replayed == (try RecordsPlan(checkedB, field: fieldB, request: requestB, secret: Self.secret)).statement)
        #expect(!"\(replayed.binds)".contains("SENTINEL"))
    }

    @Test("each part of a shape is needed: values that change the text change the shape")
    func shapesSeparateTexts() throws {
        func shapeAndSQL(_ filter: String, _ args: JSONValue, sort: String = "[]", scope: String = "PRIVATE") throws -> (String, String) {
            let document = """
                query($a: JSON) { records(scope: \(scope), zone: {zoneName: "\(scope == "PUBLIC" ? "_defaultZone" : "Z")", ownerName: "o"}, \
                recordType: "P", filter: "\(filter)", args: $a, sort: \(sort)) { records { recordName } } }
                """
            let (request, field, checked) = try Self.checkedOrRefused(document, ["a": args])
            return (checked.shape, try RecordsPlan(checked, field: field, request: request, secret: Self.secret).statement.sql)
        }
        let pairs: [((String, JSONValue), (String, JSONValue))] = [
            (("s == %@", .array([.null])), ("s == %@", .array([.string("x")]))),
            (("s IN %@", .array([.array([])])), ("s IN %@", .array([.array([.string("x")])]))),
            (("s BEGINSWITH %@", .array([.string("")])), ("s BEGINSWITH %@", .array([.string("a")]))),
            (("self CONTAINS %@", .array([.string("!!")])), ("self CONTAINS %@", .array([.string("fig")]))),
            (("s == 'a'", .null), ("s == 'b'", .null)),
        ]
        for ((filterA, argsA), (filterB, argsB)) in pairs {
            let a = try shapeAndSQL(filterA, argsA), b = try shapeAndSQL(filterB, argsB)
            #expect(a.0 != b.0, "\(filterA) \(argsA) against \(filterB) \(argsB)")
        }
        let one = try shapeAndSQL("n > 1", .null, sort: "[{field: \"n\"}]"), two = try shapeAndSQL("n > 1", .null, sort: "[{field: \"n\"}, {field: \"s\"}]")
        #expect(one.0 != two.0 && one.1 != two.1)
        let near = try shapeAndSQL("n > 1", .null, sort: "[{field: \"loc\", relativeLocation: {latitude: 1, longitude: 2}}]")
        let plain = one
        #expect(near.0 != plain.0)
        let scopes = try ["PRIVATE", "SHARED", "PUBLIC"].map { try shapeAndSQL("n > 1", .null, scope: $0) }
        #expect(Set(scopes.map(\.0)).count == 3 && Set(scopes.map(\.1)).count == 3)
    }

    @Test("lookup: another request's names and zone replayed are its new plan")
    func lookupReplay() throws {
        let document = "query($n: [String!]!, $z: String!) { lookup(scope: PRIVATE, zone: {zoneName: $z}, recordNames: $n) { recordName record { recordName fields } error { code } } }"
        func checked(_ names: [String], _ zone: String) throws -> (ParsedRequest, SelectedField, LookupPlan.Checked) {
            let request = try ParsedRequest(query: document, variables: ["n": .array(names.map(JSONValue.string)), "z": .string(zone)])
            let field = try request.rootFields()[0]
            return (request, field, try LookupPlan.check(field, request: request))
        }
        let (requestA, fieldA, a) = try checked(["SENTINELname"], "SENTINELzone")
        let template = try #require(try LookupPlan(a, field: fieldA, request: requestA, recording: true).template)
        #expect(!template.sql.contains("SENTINEL"))
        let (requestB, fieldB, b) = try checked(["x", "y", "z"], "Other")
        #expect(a.shape == b.shape)
        #expect(try LookupPlan(b, template: template).statement == LookupPlan(b, field: fieldB, request: requestB).statement)
    }
}
