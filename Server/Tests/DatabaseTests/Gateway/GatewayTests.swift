@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Testing

/// `/graphql` and `/health` through the real Hummingbird stack, against a
/// real database, with real tokens.
@Suite("Gateway over HTTP")
struct GatewayTests {
    @Test("me answers the caller's own user, with exactly the fields asked for")
    func me() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let (status, body) = try await client.graphql("{ me { userRecordName name email phone } }", token: harness.aliceToken)
            #expect(status == .ok)
            let me = (body["data"] as? [String: Any])?["me"] as? [String: Any]
            #expect(me?["userRecordName"] as? String == harness.alice.userRecordName)
            #expect(me?["name"] as? String == "alice")
            #expect(me?["email"] as? String == "alice@example.com")
            #expect(me?["phone"] is NSNull)
            #expect(body["errors"] == nil)

            let (_, bobs) = try await client.graphql("{ me { name } }", token: harness.bobToken)
            let bob = (bobs["data"] as? [String: Any])?["me"] as? [String: Any]
            #expect(bob?.keys.sorted() == ["name"], "only the fields asked for")
            #expect(bob?["name"] as? String == "bob")
        }
    }

    @Test("aliases, __typename, fragments, @skip and variables shape the answer")
    func selection() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let query = """
                query Who($hide: Boolean!) {
                  who: me { handle: name __typename ...Contact }
                  again: me { userRecordName @skip(if: $hide) }
                }
                fragment Contact on User { email }
                """
            let (status, body) = try await client.graphql(query, variables: ["hide": true], token: harness.aliceToken)
            #expect(status == .ok)
            let data = body["data"] as? [String: Any]
            let who = data?["who"] as? [String: Any]
            #expect(who?["handle"] as? String == "alice")
            #expect(who?["__typename"] as? String == "User")
            #expect(who?["email"] as? String == "alice@example.com")
            #expect((data?["again"] as? [String: Any])?.isEmpty == true)
        }
    }

    @Test("GET /graphql runs queries, not mutations")
    func getQueries() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let (status, body, headers) = try await client.get("/graphql?query=%7B%20me%20%7B%20name%20%7D%20%7D", token: harness.aliceToken)
            #expect(status == .ok)
            #expect(((body["data"] as? [String: Any])?["me"] as? [String: Any])?["name"] as? String == "alice")
            #expect(headers[HTTPField.Name("X-Request-ID")!] != nil)
            let mutation = "mutation%20%7B%20saveZone(zoneName%3A%20%22x%22)%20%7B%20zoneName%20%7D%20%7D"
            let (refused, refusal, _) = try await client.get("/graphql?query=\(mutation)", token: harness.aliceToken)
            #expect(refused == .badRequest)
            #expect(errorCode(refusal) == "BAD_REQUEST")
            // Variables that are not JSON are named with where they go wrong.
            let (badVariables, badBody, _) = try await client.get("/graphql?query=%7B%20me%20%7B%20name%20%7D%20%7D&variables=%7B%22a%22%3A%7D",
                                                                  token: harness.aliceToken)
            #expect(badVariables == .badRequest)
            #expect(firstError(badBody)["message"] as? String
                    == "the variables parameter is not JSON: expected a JSON value at line 1, column 6 of the JSON", "\(badBody)")
            let (listVariables, listBody, _) = try await client.get("/graphql?query=%7B%20me%20%7B%20name%20%7D%20%7D&variables=%5B1%5D",
                                                                    token: harness.aliceToken)
            #expect(listVariables == .badRequest)
            #expect(firstError(listBody)["message"] as? String == "the variables parameter must be a JSON object, not a list")
        }
    }

    @Test("no token, an unknown token, a malformed one or a wrong secret: 401 NOT_AUTHENTICATED")
    func authentication() async throws {
        let harness = try await GatewayHarness.make()
        let selector = harness.aliceToken.split(separator: "_")[1]
        let tokens: [String?] = [
            nil, "nonsense", "cnp_0123456789abcdef_notTheSecret", "cnp_\(selector)_notTheSecret",
            String(harness.aliceToken.dropLast()) + (harness.aliceToken.hasSuffix("A") ? "B" : "A"),
        ]
        try await harness.test { client in
            for token in tokens {
                let (status, body) = try await client.graphql("{ me { name } }", token: token)
                #expect(status == .unauthorized, "\(token ?? "no token")")
                #expect(errorCode(body) == "NOT_AUTHENTICATED")
                #expect(body["data"] == nil)
            }
        }
    }

    @Test("documents that do not parse or validate: 400 BAD_REQUEST with line and column")
    func badDocuments() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            // "é" is one character but two bytes: the column counts characters.
            let (status, body) = try await client.graphql("# café\n{ me { name }", token: harness.aliceToken)
            #expect(status == .badRequest)
            #expect(errorCode(body) == "BAD_REQUEST")
            let location = (firstError(body)["locations"] as? [[String: Int]])?.first
            #expect(location == ["line": 2, "column": 14], "\(body)")
            #expect(firstError(body)["message"] as? String == "Syntax error: Expected Name, found <EOF>")

            let (invalid, invalidBody) = try await client.graphql("{\n  me { nme }\n}", token: harness.aliceToken)
            #expect(invalid == .badRequest)
            #expect((firstError(invalidBody)["message"] as? String)?.contains("nme") == true)
            #expect((firstError(invalidBody)["locations"] as? [[String: Int]])?.first == ["line": 2, "column": 8])

            let (unnamed, unnamedBody) = try await client.graphql("query A { me { name } } query B { me { email } }", token: harness.aliceToken)
            #expect(unnamed == .badRequest)
            #expect(errorCode(unnamedBody) == "BAD_REQUEST")
            let (named, namedBody) = try await client.graphql("query A { me { name } } query B { me { email } }", operationName: "B", token: harness.aliceToken)
            #expect(named == .ok)
            #expect(((namedBody["data"] as? [String: Any])?["me"] as? [String: Any])?["email"] as? String == "alice@example.com")

            let (notJSON, notJSONBody) = try await client.post(body: ByteBuffer(string: "{ me { name } }"), token: harness.aliceToken)
            #expect(notJSON == .badRequest)
            #expect(errorCode(notJSONBody) == "BAD_REQUEST")
            // A fault in the body's JSON is placed in the body (the message), not in the document (locations).
            #expect(firstError(notJSONBody)["message"] as? String == "expected a string key at line 1, column 3 of the JSON")
            #expect(firstError(notJSONBody)["locations"] == nil)
            let (badVariables, badVariablesBody) = try await client.post(
                body: ByteBuffer(string: #"{"query": "{ me { name } }", "variables": [1]}"#), token: harness.aliceToken)
            #expect(badVariables == .badRequest)
            #expect(firstError(badVariablesBody)["message"] as? String == #""variables" must be a JSON object, not a list"#)
            let (noQuery, noQueryBody) = try await client.post(body: ByteBuffer(string: #"{"variables": {}}"#), token: harness.aliceToken)
            #expect(noQuery == .badRequest)
            #expect((firstError(noQueryBody)["message"] as? String)?.hasSuffix(#""query" must be a string"#) == true, "\(noQueryBody)")
        }
    }

    @Test("limits: body size (413), depth and aliases (LIMIT_EXCEEDED)")
    func limits() async throws {
        let harness = try await GatewayHarness.make()
        let configuration = GatewayConfiguration(maximumBodySize: 2048, maximumDepth: 3, maximumAliases: 2)
        try await harness.test(configuration: configuration) { client in
            let padding = String(repeating: " ", count: 4096)
            let (status, body) = try await client.graphql("{ me { name }\(padding) }", token: harness.aliceToken)
            #expect(status == .contentTooLarge)
            #expect(errorCode(body) == "LIMIT_EXCEEDED")

            let (aliases, aliasesBody) = try await client.graphql("{ a: me { name } b: me { name } c: me { name } }", token: harness.aliceToken)
            #expect(aliases == .badRequest)
            #expect(errorCode(aliasesBody) == "LIMIT_EXCEEDED")
            #expect((firstError(aliasesBody)["message"] as? String)?.contains("2") == true)

            let deep = "{ share(scope: PRIVATE, zone: {zoneName: \"z\"}) { zone { share { zone { zoneName } } } } }"
            let (depth, depthBody) = try await client.graphql(deep, token: harness.aliceToken)
            #expect(depth == .badRequest)
            #expect(errorCode(depthBody) == "LIMIT_EXCEEDED")
        }
    }

    @Test("introspection answers for GraphQL tools")
    func introspection() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let (status, body) = try await client.graphql("{ __schema { queryType { name } types { name } } }", token: harness.aliceToken)
            #expect(status == .ok)
            let schema = (body["data"] as? [String: Any])?["__schema"] as? [String: Any]
            let names = (schema?["types"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
            #expect(names.contains("Record") && names.contains("ShareMetadata") && names.contains("DatabaseScope"))
        }
    }

    @Test("health is 200 when the database answers; 503 SERVICE_UNAVAILABLE when it does not")
    func availability() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let (status, body, _) = try await client.get("/health", token: nil)
            #expect(status == .ok)
            #expect(body["status"] as? String == "ok")
        }
        let nowhere = DatabaseEndpoint(transport: .tcp(host: "127.0.0.1", port: 1), username: "canopy_gateway", password: nil, database: "canopy")
        try await harness.test(gatewayEndpoint: nowhere, availabilityTimeout: .seconds(1)) { client in
            let (status, _, headers) = try await client.get("/health", token: nil)
            #expect(status == .serviceUnavailable)
            #expect(headers[.retryAfter] == "1", "a 503 says when to ask again")
            let (graphQLStatus, body) = try await client.graphql("{ me { name } }", token: harness.aliceToken)
            #expect(graphQLStatus == .serviceUnavailable)
            #expect(errorCode(body) == "SERVICE_UNAVAILABLE")
        }
    }

    @Test("a token is never stored or logged in clear")
    func tokenSecrecy() async throws {
        let harness = try await GatewayHarness.make()
        let secret = String(harness.aliceToken.split(separator: "_", maxSplits: 2)[2])
        try await harness.test(configuration: GatewayConfiguration(accessLog: true)) { client in
            _ = try await client.graphql("{ me { name } }", token: harness.aliceToken)
            _ = try await client.graphql("{ me { nme } }", token: harness.aliceToken)
            _ = try await client.graphql("{ me { name } }", token: harness.aliceToken + "x")
        }
        #expect(!harness.logs.text.isEmpty, "the gateway logged something")
        #expect(!harness.logs.text.contains(secret), "the secret appears in the gateway's logs")
        let stored = try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.texts("""
                SELECT count(*)::text FROM (
                    SELECT row_to_json(t)::text AS line FROM canopy.api_tokens t
                    UNION ALL SELECT row_to_json(u)::text FROM canopy.users u
                ) rows WHERE strpos(line, \(secret)) > 0 OR strpos(line, encode(convert_to(\(secret), 'UTF8'), 'hex')) > 0
                """)
        }
        #expect(stored == ["0"], "the secret is stored somewhere")
        let hashes = try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.texts("SELECT count(*)::text FROM canopy.api_tokens WHERE secret_hash = sha256(convert_to(\(secret), 'UTF8'))")
        }
        #expect(hashes == ["1"], "its SHA-256 is what is stored")
    }

    @Test("errors carry the request id that the X-Request-ID header and the logs carry")
    func requestIDs() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(configuration: GatewayConfiguration(accessLog: true)) { client in
            let response = try await client.execute(
                uri: "/graphql", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: "{\"query\": \"{ me { name } }\"}")
            )
            let header = response.headers[HTTPField.Name("X-Request-ID")!]
            let body = try responseJSON(response.body)
            let id = (firstError(body)["extensions"] as? [String: Any])?["requestId"] as? String
            #expect(header != nil && header == id)
            #expect(harness.logs.text.contains(id ?? "?"), "the request id is in the logs")
        }
        // Without --access-log, a request that succeeds writes no log line.
        let quiet = try await GatewayHarness.make()
        try await quiet.test { client in
            _ = try await client.graphql("{ me { name } }", token: quiet.aliceToken)
        }
        #expect(!quiet.logs.text.contains("/graphql"), "\(quiet.logs.text)")
    }
}
