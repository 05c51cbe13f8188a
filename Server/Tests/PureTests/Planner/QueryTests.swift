import CanopyPlanner
import CanopyTestSupport
import Foundation
import GraphQL
import Testing

@Suite("The schema Canopy serves")
struct SchemaTests {
    @Test("the served SDL is Server/schema/canopy.graphql, byte for byte (the build plugin embeds it)")
    func schemaFileMatches() throws {
        let root = Repository.rootURL
        let file = try String(contentsOf: root.appendingPathComponent("Server/schema/canopy.graphql"), encoding: .utf8)
        #expect(file == GraphQLAPISource.sdl)
    }

    @Test("the SDL builds and has the contract's root fields")
    func builds() throws {
        let query = try #require(GraphQLAPI.schema.queryType)
        #expect(try query.fields().keys.sorted() == [
            "databaseChanges", "devices", "discoverUser", "lookup", "me", "pushConfiguration", "recordTypes", "records", "share",
            "shareMetadata", "subscriptions", "zoneChanges", "zoneRanges", "zones",
        ])
        #expect(try GraphQLAPI.schema.mutationType?.fields().keys.sorted() == [
            "acceptShare", "approveAccessRequest", "blockAccessRequest", "deleteShare", "deleteSubscription", "deleteZone",
            "denyAccessRequest", "issueToken", "leaveShare", "modifyRecords", "moveRecords", "registerDevice", "removeParticipant",
            "requestShareAccess", "revokeToken", "saveShare", "saveSubscription", "saveZone", "setParticipant", "unblockRequester",
            "unregisterDevice",
        ])
    }
}

@Suite("Parsing and validating documents")
struct ParsedRequestTests {
    @Test("zone names, record types and field names follow docs/API.md's patterns exactly")
    func namingRules() {
        // \\A…\\z: the whole string (a regex's $ also matches before a final newline,
        // which the old regex-based checks let through).
        let zone = "\\A[A-Za-z0-9.-][A-Za-z0-9_.-]{0,254}\\z", identifier = "\\A[A-Za-z][A-Za-z0-9_]{0,254}\\z"
        let samples = ["Fasting", "a", "_defaultZone", "_x", "-a", ".a", "9lives", "a_b.c-d", "", "a b", "é", "a\n", "Zone!",
                       String(repeating: "a", count: 255), String(repeating: "a", count: 256), "A1_", "1A", "a-b", "a.b"]
        for sample in samples {
            let zoneByRegex = sample == "_defaultZone" || sample.range(of: zone, options: .regularExpression) != nil
            #expect(Names.isZoneName(sample) == zoneByRegex, "zone name \(sample.debugDescription)")
            let identifierByRegex = sample.range(of: identifier, options: .regularExpression) != nil
            #expect(Names.isRecordType(sample) == identifierByRegex && Names.isFieldName(sample) == identifierByRegex, "\(sample.debugDescription)")
        }
    }

    @Test("a document seen before is reused with each request's own variables, operation and limits")
    func reusedDocuments() throws {
        let text = "query A($n: String!) { lookup(scope: PRIVATE, zone: {zoneName: $n}, recordNames: [\"x\"]) { recordName } } query B { me { name } }"
        let first = try ParsedRequest(query: text, variables: ["n": .string("one")], operationName: "A")
        let second = try ParsedRequest(query: text, variables: ["n": .string("two")], operationName: "A")
        #expect(first.variables["n"] == .string("one") && second.variables["n"] == .string("two"))
        let other = try ParsedRequest(query: text, operationName: "B")
        #expect(other.operation.name?.value == "B" && other.variables.isEmpty)
        #expect(throws: QueryError.self) { try ParsedRequest(query: text, operationName: "A", limits: .init(maximumDepth: 1)) }
        #expect(throws: QueryError.self) { try ParsedRequest(query: text) }   // two operations, none named
    }

    @Test("syntax errors carry the line and column in characters")
    func syntaxError() {
        #expect(throws: QueryError(.badRequest, "Syntax error: Expected Name, found }", locations: [.init(line: 3, column: 8)])) {
            _ = try ParsedRequest(query: "{\n  # naïve\n  me { }")
        }
    }

    @Test("validation errors point at the offending field")
    func validationError() throws {
        do {
            _ = try ParsedRequest(query: "{ me { name nope } }")
            Issue.record("validated")
        } catch let error as QueryError {
            #expect(error.code == .badRequest)
            #expect(error.message.contains("nope"))
            #expect(error.locations == [.init(line: 1, column: 13)])
        }
    }

    @Test("an operation is picked by name, and must be when there are several")
    func operations() throws {
        let document = "query A { me { name } } query B { me { email } }"
        #expect(try ParsedRequest(query: document, operationName: "B").operation.name?.value == "B")
        #expect(throws: QueryError.self) { try ParsedRequest(query: document) }
        #expect(throws: QueryError.self) { try ParsedRequest(query: document, operationName: "C") }
    }

    @Test("two alike definitions (anonymous operations, or operations or fragments sharing a name) are refused before validation, whose dictionaries trap on them at random (found while fuzzing)")
    func alikeDefinitions() throws {
        // Each document is new text, so none comes from the cache, and each
        // parse makes new nodes with new hashes: without the check, a few
        // hundred tries meet a collision and the process traps.
        func column(ofLast word: String, in text: String) -> Int {
            text.distance(from: text.startIndex, to: text.range(of: word, options: .backwards)!.lowerBound) + 1
        }
        for n in 0..<300 {
            let padding = String(repeating: " ", count: n % 40)
            let anonymous = "{ me { name } }\(padding) { me { name } } #\(n)"
            #expect(throws: QueryError(.badRequest, "This anonymous operation must be the only defined operation.", locations: [.init(line: 1, column: 1)])) {
                try ParsedRequest(query: anonymous)
            }
            let named = "query A { me { name } }\(padding) query A { me { name } } #\(n)"
            #expect(throws: QueryError(.badRequest, "There can be only one operation named \"A\".", locations: [.init(line: 1, column: column(ofLast: "query", in: named))])) {
                try ParsedRequest(query: named, operationName: "A")
            }
            let fragments = "query A { me { ...F } } fragment F on User { name }\(padding) fragment F on User { name } #\(n)"
            #expect(throws: QueryError(.badRequest, "There can be only one fragment named \"F\".", locations: [.init(line: 1, column: column(ofLast: "fragment", in: fragments))])) {
                try ParsedRequest(query: fragments)
            }
        }
        #expect(throws: Never.self) { try ParsedRequest(query: "query A { me { name } } query B { me { name } }", operationName: "B") }
        #expect(throws: Never.self) { try ParsedRequest(query: "{ me { ...F ...G } } fragment F on User { name } fragment G on User { name }") }
    }

    @Test("fragments, inline fragments, aliases and @skip/@include flatten into response keys")
    func flattening() throws {
        let request = try ParsedRequest(
            query: """
                query($show: Boolean!) { me { ...F ... on User { phone } e: email @include(if: $show) name @skip(if: true) } }
                fragment F on User { userRecordName email }
                """,
            variables: ["show": .bool(false)]
        )
        let me = try request.rootFields()
        #expect(me.map(\.responseKey) == ["me"])
        #expect(me[0].children.map(\.responseKey) == ["userRecordName", "email", "phone"])
        #expect(try request.isIntrospectionOnly() == false)
        #expect(try ParsedRequest(query: "{ __schema { queryType { name } } }").isIntrospectionOnly())
    }

    @Test("depth and alias limits name the limit")
    func limits() {
        #expect(throws: QueryError(.limitExceeded, "the document uses more aliases than the limit of 1", locations: [.init(line: 1, column: 18)])) {
            _ = try ParsedRequest(query: "{ a: me { name } b: me { name } }", limits: .init(maximumDepth: 5, maximumAliases: 1))
        }
        #expect(throws: QueryError.self) {
            _ = try ParsedRequest(query: "{ me { name } }", limits: .init(maximumDepth: 1, maximumAliases: 5))
        }
    }

    @Test("nesting past 64 levels of {, [ or ( is refused before the GraphQL parser, which would overflow the stack (found while fuzzing); brackets in strings and comments do not count")
    func nesting() throws {
        let lists = "{ me(x: " + String(repeating: "[", count: 20_000) + String(repeating: "]", count: 20_000) + ") { name } }"
        let selections = "{ me { " + String(repeating: "a { ", count: 10_000) + String(repeating: "}", count: 10_000) + " } }"
        for query in [lists, selections] {
            #expect(throws: QueryError.self) { _ = try ParsedRequest(query: query) }
            do {
                _ = try ParsedRequest(query: query)
            } catch let error as QueryError {
                #expect(error.code == .limitExceeded && error.message.contains("more than 64 deep"), "\(error.message)")
            }
        }
        let quoted = "# " + String(repeating: "[", count: 100) + "\n"
            + "{ records(scope: PRIVATE, zone: {zoneName: \"" + String(repeating: "{", count: 100) + "\"}, recordType: \"T\", filter: \"\"\""
            + String(repeating: "(", count: 100) + "\"\"\") { cursor } }"
        #expect(throws: Never.self) { _ = try ParsedRequest(query: quoted) }
    }
}

@Suite("SQL for me")
struct MePlanTests {
    @Test("builds exactly the asked fields, every response key bound as a parameter")
    func goldenSQL() throws {
        let request = try ParsedRequest(query: "{ me { id: userRecordName email __typename } }")
        let plan = try MePlan(try request.rootFields()[0])
        let query = plan.statement
        #expect(query.sql == "SELECT json_build_object($1::text, u.record_name, $2::text, u.email, $3::text, 'User')::text FROM canopy.users u WHERE u.id = canopy.current_user_id()")
        #expect(query.binds.count == 3)
    }
}
