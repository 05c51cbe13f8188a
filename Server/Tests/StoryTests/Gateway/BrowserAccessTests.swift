@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Browsers as clients (docs/API.md §10): CORS for the configured origins only,
/// and GET /graphql as forms and GraphQL-over-HTTP clients send it.
@Suite("Browsers: CORS and GET /graphql")
struct BrowserAccessTests {
    static let app = "https://app.example.com"

    @Test("a preflight from an allowed origin is answered with that origin; from another origin it is refused without CORS headers")
    func preflight() async throws {
        let harness = try await GatewayHarness.make()
        let configuration = GatewayConfiguration(crossOrigin: try CrossOriginPolicy(origins: [Self.app, "http://localhost:3000"]))
        try await harness.test(configuration: configuration) { client in
            let preflight: HTTPFields = [
                .origin: Self.app, .accessControlRequestMethod: "POST", .accessControlRequestHeaders: "authorization, content-type",
            ]
            let allowed = try await client.execute(uri: "/graphql", method: .options, headers: preflight)
            #expect(allowed.status == .noContent)
            #expect(allowed.headers[.accessControlAllowOrigin] == Self.app)
            #expect(allowed.headers[.accessControlAllowMethods]?.contains("POST") == true)
            let headers = allowed.headers[.accessControlAllowHeaders]?.lowercased() ?? ""
            #expect(headers.contains("authorization") && headers.contains("content-type"))
            #expect(allowed.headers[.accessControlAllowCredentials] == nil)

            var other = preflight
            other[.origin] = "https://evil.example"
            let refused = try await client.execute(uri: "/graphql", method: .options, headers: other)
            #expect(refused.status == .forbidden)
            #expect(refused.headers[.accessControlAllowOrigin] == nil)

            // The request itself: the origin echoed (never *) for the allowed one.
            let body = ByteBuffer(string: #"{"query": "{ me { name } }"}"#)
            let post = try await client.execute(uri: "/graphql", method: .post, headers: [
                .origin: Self.app, .contentType: "application/json", .authorization: "Bearer \(harness.aliceToken)",
            ], body: body)
            #expect(post.status == .ok)
            #expect(post.headers[.accessControlAllowOrigin] == Self.app)
            #expect(post.headers[.accessControlExposeHeaders]?.contains("X-Request-ID") == true)
            #expect(post.headers[values: .vary].contains("Origin"))
            let foreign = try await client.execute(uri: "/graphql", method: .post, headers: [
                .origin: "https://evil.example", .contentType: "application/json", .authorization: "Bearer \(harness.aliceToken)",
            ], body: body)
            #expect(foreign.headers[.accessControlAllowOrigin] == nil)
        }
        // No origin configured: nobody's preflight passes.
        try await harness.test { client in
            let response = try await client.execute(uri: "/graphql", method: .options, headers: [.origin: Self.app, .accessControlRequestMethod: "POST"])
            #expect(response.status == .forbidden)
        }
    }

    @Test("a real headless Chromium calls /graphql from an allowed origin (preflight, Authorization, JSON); from another origin the browser blocks it")
    func realBrowser() async throws {
        let harness = try await GatewayHarness.make()
        // From the kernel, as every suite takes its ports: random ones in the
        // ephemeral range met another test's socket once (EADDRINUSE in CI).
        let allowedPort = try EmbeddedCluster.freePort()
        var otherPort = try EmbeddedCluster.freePort()
        while otherPort == allowedPort { otherPort = try EmbeddedCluster.freePort() }
        let refusedPort = otherPort
        let configuration = GatewayConfiguration(port: 0, crossOrigin: try CrossOriginPolicy(origins: ["http://127.0.0.1:\(allowedPort)"]))
        let script = "\(Repository.root)/Server/Tests/python/browser_cors.py"
        try await harness.test(configuration: configuration, live: true) { client in
            let port = try #require(client.port)
            let result = try await Subprocess.start("/usr/bin/env", [
                "python3", script, "http://127.0.0.1:\(port)/graphql", harness.aliceToken, String(allowedPort), String(refusedPort),
            ]).finished()
            #expect(result.succeeded, "\(result.output)")
            let line = result.output.split(separator: "\n").last.map(String.init) ?? ""
            let seen = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            let allowed = seen["allowed"] as? [String: Any]
            #expect(allowed?["status"] as? Int == 200, "\(result.output)")
            #expect((((allowed?["body"] as? [String: Any])?["data"] as? [String: Any])?["me"] as? [String: Any])?["name"] as? String == "alice")
            #expect(allowed?["requestId"] is String, "X-Request-ID is exposed to the page")
            let refused = seen["refused"] as? [String: Any]
            #expect((refused?["error"] as? String)?.contains("Failed to fetch") == true, "\(result.output)")
        }
    }

    @Test("--cors-origin refuses a wildcard, null and anything with a path")
    func originList() {
        for bad in ["*", "null", "https://app.example.com/", "app.example.com", "https://app.example.com/path"] {
            #expect(throws: GatewayConfigurationError.self, "\(bad)") { try CrossOriginPolicy(origins: [bad]) }
        }
        #expect((try? CrossOriginPolicy(origins: ["HTTPS://App.Example.com:8443", "http://[::1]:3000"]))?.origins == ["https://app.example.com:8443", "http://[::1]:3000"])
    }

    @Test("GET reads the query string as a form: + is a space and escapes are decoded once; Accept picks application/graphql-response+json")
    func getAsForm() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            // `{ me { name } }` with + for spaces; %2B is a literal + (in a string that must stay one).
            let (status, body, headers) = try await client.get("/graphql?query=query+Who+%7B+me+%7B+name+%7D+%7D&operationName=Who", token: harness.aliceToken)
            #expect(status == .ok, "\(body)")
            #expect(((body["data"] as? [String: Any])?["me"] as? [String: Any])?["name"] as? String == "alice")
            #expect(headers[.contentType]?.hasPrefix("application/json") == true)

            let variables = "%7B%22e%22%3A%22a%2Bb%40example.com%22%7D"   // {"e":"a+b@example.com"}
            let lookup = try await client.get("/graphql?query=query(%24e%3A+String)+%7B+discoverUser(email%3A+%24e)+%7B+userRecordName+%7D+%7D&variables=\(variables)", token: harness.aliceToken)
            #expect(lookup.0 == .ok, "the %2B stays a +: \(lookup.1)")

            let broken = try await client.get("/graphql?query=%7B+me+%ZZ", token: harness.aliceToken)
            #expect(broken.0 == .badRequest)
            #expect((firstError(broken.1)["message"] as? String)?.contains("the query parameter has an invalid percent escape") == true, "\(broken.1)")

            var accept: HTTPFields = [.authorization: "Bearer \(harness.aliceToken)", .accept: "application/graphql-response+json, application/json;q=0.9"]
            let modern = try await client.execute(uri: "/graphql?query=%7B+me+%7B+name+%7D+%7D", method: .get, headers: accept)
            #expect(modern.status == .ok)
            #expect(modern.headers[.contentType] == "application/graphql-response+json; charset=utf-8")
            let invalid = try await client.execute(uri: "/graphql?query=%7B+me+%7B+nope+%7D+%7D", method: .get, headers: accept)
            #expect(invalid.status == .badRequest, "a document that does not validate is 4xx under graphql-response+json")
            #expect(invalid.headers[.contentType] == "application/graphql-response+json; charset=utf-8")
            accept[.accept] = "text/html"
            let html = try await client.execute(uri: "/graphql?query=%7B+me+%7B+name+%7D+%7D", method: .get, headers: accept)
            #expect(html.status == .notAcceptable)
        }
    }
}
