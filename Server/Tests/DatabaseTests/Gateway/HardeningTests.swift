@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyGateway
import CanopyPlanner
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Issue 48's findings, each a request that once reached an internal error
/// or escaped a limit (docs/SECURITY.md, "Hardening, issue 48"). The
/// replayed signature is in `ServerToServerTests/malleableReplay` and the
/// hidden name clash in `MoveRecordsTests/invisibleNameClash`.
@Suite("Hardening: inputs that once reached an internal error or escaped a limit")
struct HardeningTests {
    /// POSTs a GraphQL body with or without a token.
    static func post(_ client: some TestClientProtocol, _ query: String, _ variables: [String: Any]? = nil, token: String?) async throws -> (status: HTTPResponse.Status, body: [String: Any], text: String) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        var payload: [String: Any] = ["query": query]
        if let variables { payload["variables"] = variables }
        let response = try await client.execute(uri: "/graphql", method: .post, headers: headers, body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: payload)))
        let text = String(buffer: response.body)
        return (response.status, (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:], text)
    }

    /// POSTs a GraphQL body without a token to a live test server through
    /// AsyncHTTPClient, waiting up to two minutes: HummingbirdTesting's live
    /// client gives up after 20 s, and six new introspection documents at
    /// once (each parsed, validated and weighed before the gate) took longer
    /// than that beside the failover and network-fault suites in a CI run.
    /// Being answered, 200 or 429, is what is tested, not how fast.
    static func postLive(port: Int, _ query: String) async throws -> (HTTPResponse.Status, String) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/graphql")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: ["query": query])))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 24))
        return (HTTPResponse.Status(code: Int(response.status.code)), text)
    }

    /// Every code in an answer: its errors' and its record errors'.
    static func codes(_ text: String) -> [String] {
        let pattern = try! NSRegularExpression(pattern: #""code"\s*:\s*"([A-Z_]+)""#)
        return pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    // MARK: 2. Introspection

    @Test("60 aliases under __schema, or in a fragment spread there, are LIMIT_EXCEEDED before anything runs; the standard introspection query still answers")
    func introspectionAliases() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let aliases = (0..<60).map { "a\($0): types { name fields { name } }" }.joined(separator: " ")
            let documents = [
                "{ " + (0..<60).map { "s\($0): __schema { types { name fields { name } } }" }.joined(separator: " ") + " }",
                "{ __schema { \(aliases) } }",
                "query { __schema { ...Many } } fragment Many on __Schema { \(aliases) }",
            ]
            for document in documents {
                for token in [nil, harness.aliceToken] {
                    let answer = try await Self.post(client, document, token: token)
                    #expect(answer.status == .badRequest && errorCode(answer.body) == "LIMIT_EXCEEDED", "\(answer.text.prefix(300))")
                    #expect(answer.text.utf8.count < 1_000, "a refusal, not an answer: \(answer.text.utf8.count) bytes")
                }
            }
            // Within the alias limit, but each alias a whole schema: the
            // answer's weight is counted before the executor runs.
            let heavy = "{ " + (0..<25).map { "s\($0): __schema { types { fields { args { type { name } } type { name } } } }" }.joined(separator: " ") + " }"
            let refused = try await Self.post(client, heavy, token: nil)
            #expect(refused.status == .badRequest && errorCode(refused.body) == "LIMIT_EXCEEDED" && refused.text.contains("introspection"), "\(refused.text.prefix(300))")
            // What GraphQL tools send (gql, Apollo, GraphiQL) still works, with
            // and without a token.
            var answers: [String] = []
            for token in [nil, harness.aliceToken] {
                let standard = try await Self.post(client, Self.standardIntrospection, token: token)
                #expect(standard.status == .ok && standard.text.contains("\"queryType\"") && standard.text.utf8.count > 20_000, "\(standard.text.prefix(300))")
                answers.append(standard.text)
            }
            #expect(answers[0] == answers[1], "the kept answer is the answer")
        }
    }

    @Test("new introspection documents asked at once: each is answered or told 429 with Retry-After (one runs at a time), never a 5xx")
    func introspectionOneAtATime() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(live: true) { client in
            let port = try #require(client.port)
            let answers = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String).self) { group in
                for index in 0..<6 {
                    group.addTask {
                        try await Self.postLive(port: port, "# \(index) \(UUID())\n" + Self.standardIntrospection)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.contains { $0.0 == .ok }, "\(answers.map(\.0))")
            for (status, text) in answers {
                #expect(status == .ok || (status == .tooManyRequests && text.contains("LIMIT_EXCEEDED")), "\(status) \(text.prefix(200))")
            }
        }
    }

    // MARK: 4. NUL

    @Test("U+0000 anywhere (values, names, lookups, moves, share roots, fields(keys:), subscription ids, discoverUser, share title, type, email, phone) is INVALID_ARGUMENTS naming the argument, signed in or not, and no error is logged")
    func nulEverywhere() async throws {
        let harness = try await GatewayHarness.make()
        let nul = "a\u{0}b"
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Lists\") { zoneName } }", token: harness.aliceToken)
            _ = try await save(client, token: harness.aliceToken, zone: "Lists", [["recordName": "r1", "recordType": "Note", "fields": ["text": "x"]]])
            let zone = "zone: {zoneName: \"Lists\"}"
            let cases: [(argument: String, query: String, variables: [String: Any])] = [
                ("fields", "mutation($f: JSON!) { modifyRecords(scope: PRIVATE, \(zone), save: [{recordName: \"n\", recordType: \"Note\", fields: $f}]) { saved { recordName } } }", ["f": ["text": nul]]),
                ("fields", "mutation($f: JSON!) { modifyRecords(scope: PRIVATE, \(zone), save: [{recordName: \"n\", recordType: \"Note\", fields: $f}]) { saved { recordName } } }", ["f": [nul: "key"]]),
                ("save", "mutation($n: String!) { modifyRecords(scope: PRIVATE, \(zone), save: [{recordName: $n, recordType: \"Note\", fields: {}}]) { saved { recordName } } }", ["n": nul]),
                ("recordNames", "query($n: String!) { lookup(scope: PRIVATE, \(zone), recordNames: [$n]) { recordName } }", ["n": nul]),
                ("recordNames", "query($n: String!) { lookup(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}, recordNames: [$n]) { recordName } }", ["n": nul]),
                ("keys", "query($k: String!) { lookup(scope: PRIVATE, \(zone), recordNames: [\"r1\"]) { record { fields(keys: [$k]) } } }", ["k": nul]),
                ("recordNames", "mutation($n: String!) { moveRecords(from: {zoneName: \"Lists\"}, to: {zoneName: \"_defaultZone\"}, recordNames: [$n]) { moved } }", ["n": nul]),
                ("rootRecordName", "mutation($n: String!) { saveShare(zoneName: \"Lists\", rootRecordName: $n) { url } }", ["n": nul]),
                ("title", "mutation($t: String!) { saveShare(zoneName: \"Lists\", rootRecordName: \"r1\", title: $t) { url } }", ["t": nul]),
                ("type", "mutation($t: String!) { saveShare(zoneName: \"Lists\", rootRecordName: \"r1\", type: $t) { url } }", ["t": nul]),
                ("participants", "mutation($e: String!) { saveShare(zoneName: \"Lists\", rootRecordName: \"r1\", participants: [{email: $e, permission: READ_ONLY}]) { url } }", ["e": "x\u{0}@example.com"]),
                ("participants", "mutation($p: String!) { saveShare(zoneName: \"Lists\", rootRecordName: \"r1\", participants: [{phone: $p, permission: READ_ONLY}]) { url } }", ["p": "+1\u{0}555"]),
                ("subscriptionID", "mutation($i: String!) { saveSubscription(subscriptionID: $i, kind: DATABASE) { subscriptionID } }", ["i": nul]),
                ("email", "query($e: String!) { discoverUser(email: $e) { userRecordName } }", ["e": "bob\u{0}@example.com"]),
                ("filter", "query($f: String!) { records(scope: PRIVATE, \(zone), recordType: \"Note\", filter: $f) { records { recordName } } }", ["f": "text == 'a\u{0}'"]),
                ("args", "query($a: JSON) { records(scope: PRIVATE, \(zone), recordType: \"Note\", filter: \"text == $t\", args: $a) { records { recordName } } }", ["a": ["t": nul]]),
            ]
            for (argument, query, variables) in cases {
                for token in [harness.aliceToken, nil] {
                    let answer = try await Self.post(client, query, variables, token: token)
                    let codes = Self.codes(answer.text)
                    #expect(answer.status.code < 500 && !codes.contains("INTERNAL_ERROR"), "\(argument): \(answer.status) \(answer.text.prefix(400))")
                    if token != nil || query.contains("PUBLIC") {
                        #expect(codes.contains("INVALID_ARGUMENTS") && answer.text.contains(argument) && answer.text.contains("U+0000"),
                                "\(argument) \(token == nil ? "anonymous" : "signed in"): \(answer.text.prefix(400))")
                    } else {
                        #expect(codes.contains("NOT_AUTHENTICATED") || codes.contains("INVALID_ARGUMENTS"), "\(answer.text.prefix(400))")
                    }
                }
            }
            // The same character typed into the document as a literal.
            let literal = try await Self.post(client, #"{ lookup(scope: PRIVATE, zone: {zoneName: "Lists"}, recordNames: ["a\u0000b"]) { recordName } }"#, token: harness.aliceToken)
            #expect(Self.codes(literal.text) == ["INVALID_ARGUMENTS"] && literal.text.contains("recordNames[0]"), "\(literal.text)")
        }
        let logged = harness.logs.text.split(separator: "\n").filter { $0.hasPrefix("error ") || $0.hasPrefix("critical ") }
        #expect(logged.isEmpty, "a client's bad input is not an error-level line: \(logged.prefix(3))")
    }

    @Test("Web Services: U+0000 in a STRING or REFERENCE value, or a name, is BAD_REQUEST naming where, never a 500")
    func nulOverWebServices() async throws {
        let harness = try await GatewayHarness.make()
        let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration()) { client in
            let bodies = [
                #"{"operations": [{"operationType": "create", "record": {"recordType": "Note", "recordName": "n1", "fields": {"text": {"value": "a\u0000b", "type": "STRING"}}}}]}"#,
                #"{"operations": [{"operationType": "create", "record": {"recordType": "Note", "recordName": "n2", "fields": {"ref": {"value": {"recordName": "a\u0000b", "action": "NONE"}, "type": "REFERENCE"}}}}]}"#,
                #"{"operations": [{"operationType": "create", "record": {"recordType": "Note", "recordName": "a\u0000b", "fields": {}}}]}"#,
            ]
            for body in bodies {
                let answer = try await client.webServices("private/records/modify", body, apiToken: apiToken, webAuthToken: harness.aliceToken)
                #expect(answer.status == .badRequest && answer.code == "BAD_REQUEST" && (answer.body["reason"] as? String)?.contains("U+0000") == true, "\(answer.status) \(answer.body)")
            }
            let lookup = try await client.webServices("private/records/lookup", #"{"records": [{"recordName": "x\u0000"}]}"#, apiToken: apiToken, webAuthToken: harness.aliceToken)
            #expect(lookup.status == .badRequest && lookup.code == "BAD_REQUEST", "\(lookup.status) \(lookup.body)")
        }
    }

    // MARK: 5. Names counted as the database counts them

    @Test("a record name of one grapheme and 6,000 code points is INVALID_ARGUMENTS without a table or constraint named; 255 two-byte code points are a name")
    func recordNameCountedInCodePoints() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let long = "e" + String(repeating: "\u{301}", count: 6_000)
            #expect(long.count == 1 && long.unicodeScalars.count == 6_001)
            for variables in [["s": [["recordName": long, "recordType": "Note", "fields": [:] as [String: Any]]]],
                              ["s": [["recordName": "ok", "recordType": "Note", "fields": [:] as [String: Any], "parent": long]]]] {
                let answer = try await Self.post(client, """
                    mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: $s) { saved { recordName } errors { code message } } }
                    """, variables, token: harness.aliceToken)
                let codes = Self.codes(answer.text)
                #expect(codes.contains("INVALID_ARGUMENTS") && !codes.contains("INTERNAL_ERROR"), "\(answer.text.prefix(300))")
                #expect(!answer.text.contains("records_") && !answer.text.contains("constraint"), "\(answer.text.prefix(300))")
            }
            let lookup = try await Self.post(client, "query($n: String!) { lookup(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordNames: [$n]) { recordName error { code } } }", ["n": long], token: harness.aliceToken)
            // A lookup of a name no record can have: it does not exist.
            #expect(Self.codes(lookup.text) == ["UNKNOWN_ITEM"], "\(lookup.text.prefix(300))")
            let edge = String(repeating: "é", count: 255)
            let saved = try await save(client, token: harness.aliceToken, zone: "_defaultZone", [["recordName": edge, "recordType": "Note", "fields": [:] as [String: Any]]])
            #expect(saved.first?["recordName"] as? String == edge)
        }
    }

    // MARK: 6. Unknown input fields

    @Test("an input object with a field its type does not declare is refused with the field's path, as a literal and as a variable, and nothing is saved")
    func unknownInputFields() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let literal = try await Self.post(client, """
                mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: [{recordName: "l", recordType: "Note", fields: {}, created: {timestamp: 1}}]) { saved { recordName } } }
                """, token: harness.aliceToken)
            #expect(literal.status == .badRequest && errorCode(literal.body) == "BAD_REQUEST" && literal.text.contains("save[0]") && literal.text.contains("created"), "\(literal.text)")
            let variable = try await Self.post(client, """
                mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: $s) { saved { recordName } } }
                """, ["s": [["recordName": "v", "recordType": "Note", "fields": [:] as [String: Any], "created": ["timestamp": 1]]]], token: harness.aliceToken)
            #expect(variable.status == .badRequest && errorCode(variable.body) == "BAD_REQUEST" && variable.text.contains("$s[0]") && variable.text.contains("created"), "\(variable.text)")
            let nested = try await Self.post(client, """
                mutation($z: ZoneID!) { modifyRecords(scope: PRIVATE, zone: $z, save: []) { saved { recordName } } }
                """, ["z": ["zoneName": "_defaultZone", "owner": "x"]], token: harness.aliceToken)
            #expect(nested.status == .badRequest && nested.text.contains("$z") && nested.text.contains("owner"), "\(nested.text)")
            let read = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordNames: [\"l\", \"v\"]) { error { code } } }", token: harness.aliceToken)
            #expect(read.list.compactMap { ($0["error"] as? [String: Any])?["code"] as? String } == ["UNKNOWN_ITEM", "UNKNOWN_ITEM"], "\(read.body)")
        }
    }

    // MARK: 7. INT64 at both ends

    @Test("INT64's minimum and maximum are saved, read back and compared, over GraphQL (literal and variable) and Web Services")
    func int64Bounds() async throws {
        let harness = try await GatewayHarness.make()
        let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration()) { client in
            let literal = try await Self.post(client, """
                mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: [{recordName: "lo", recordType: "Bound", fields: {n: -9223372036854775808}}, {recordName: "hi", recordType: "Bound", fields: {n: 9223372036854775807}}]) { saved { recordName fields } errors { code message } } }
                """, token: harness.aliceToken)
            #expect(literal.text.contains("-9223372036854775808") && literal.text.contains("9223372036854775807") && Self.codes(literal.text).isEmpty, "\(literal.text)")
            let body = #"{"query": "mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, save: $s, savePolicy: ALL_KEYS) { saved { fields } errors { code message } } }", "variables": {"s": [{"recordName": "lo2", "recordType": "Bound", "fields": {"n": -9223372036854775808}}]}}"#
            let response = try await client.execute(uri: "/graphql", method: .post, headers: [.contentType: "application/json", .authorization: "Bearer \(harness.aliceToken)"], body: ByteBuffer(string: body))
            let text = String(buffer: response.body)
            #expect(text.contains("-9223372036854775808") && Self.codes(text).isEmpty, "\(text)")
            for (filter, expected) in [("n == -9223372036854775808", ["lo", "lo2"]), ("n == 9223372036854775807", ["hi"]), ("n < 0", ["lo", "lo2"])] {
                let found = try await client.call("records", "query($f: String) { records(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordType: \"Bound\", filter: $f) { records { recordName } } }", ["f": filter], token: harness.aliceToken)
                let names = ((found.object["records"] as? [[String: Any]]) ?? []).compactMap { $0["recordName"] as? String }.sorted()
                #expect(names == expected, "\(filter): \(found.body)")
            }
            let ws = try await client.webServices("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Bound", "recordName": "ws", "fields": {"n": {"value": -9223372036854775808, "type": "INT64"}}}}, {"operationType": "create", "record": {"recordType": "Bound", "recordName": "ws2", "fields": {"n": {"value": 9223372036854775807, "type": "INT64"}}}}]}"#, apiToken: apiToken, webAuthToken: harness.aliceToken)
            #expect(ws.status == .ok && ws.records.allSatisfy { $0["serverErrorCode"] == nil } && ws.records.count == 2, "\(ws.body)")
        }
    }

    /// graphql-js's `getIntrospectionQuery()` (v16, with descriptions):
    /// what gql, GraphiQL and Apollo send; shared with `make bench`.
    static let standardIntrospection = (try? String(contentsOfFile: "\(Repository.root)/Server/Tests/python/standard_introspection.graphql", encoding: .utf8)) ?? ""
}

/// The SQLSTATE classes a request can reach, each mapped to a code other
/// than INTERNAL_ERROR in the one place (`ErrorCode.forSQLState`).
@Suite("SQLSTATE mapping")
struct SQLStateMappingTests {
    /// Every SQLSTATE a request can meet: raised by PostgreSQL on a client's
    /// value (22, 23), by concurrency (40, 55), by the server's state (08,
    /// 25, 53, 57) or limits (54, 57014), and Canopy's own class CN.
    static let reachable = [
        "22001", "22003", "22007", "22008", "22012", "22021", "22023", "2201B", "22P02", "22P05",
        "23502", "23503", "23505", "23514", "23P01",
        "40001", "40P01", "42501", "53100", "53200", "53300", "53400", "54000", "54001", "54023",
        "55006", "55P03", "57014", "57P01", "57P02", "57P03", "08000", "08006", "25006", "58030",
        "CN001", "CN002", "CN003", "CN004", "CN005", "CN006",
    ]

    @Test("every reachable SQLSTATE maps to a code that is not INTERNAL_ERROR; the server's own faults stay internal")
    func everyReachableStateMapped() {
        for state in Self.reachable {
            let mapped = ErrorCode.forSQLState(state)
            #expect(mapped != nil && mapped?.code != .internalError, "\(state) is unmapped")
        }
        for state in ["08", "22", "23", "25", "40", "53", "54", "58"] {
            #expect(ErrorCode.forSQLState(state + "ZZZ") != nil, "class \(state) is mapped whole")
        }
        for own in ["42703", "42883", "42P01", "XX000", "CN000", "P0001"] {
            #expect(ErrorCode.forSQLState(own) == nil, "\(own) is the server's own fault")
        }
        #expect(ErrorCode.forSQLState("22021")?.code == .invalidArguments)
        #expect(ErrorCode.forSQLState("23514")?.message?.contains("records_") == false)
    }
}
