@testable import CanopyGatewayTestSupport
import CanopyGateway
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The headers of docs/SECURITY.md's API8 row (issue 35): API answers are
/// never sniffed or cached, and a server reached over https tells browsers
/// to stay on https.
@Suite("Transport headers")
struct TransportHeadersTests {
    static let strictTransport = HTTPField.Name("Strict-Transport-Security")!
    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!

    func graphQL(_ client: any TestClientProtocol, token: String?) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: "/graphql", method: .post, headers: headers,
                                        body: ByteBuffer(string: #"{"query": "{ me { name } }"}"#))
    }

    @Test("/graphql answers and uploads, refusals included, carry nosniff and no-store; no HSTS over a plain-http public URL")
    func apiAnswers() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration) { client in
            let ok = try await graphQL(client, token: harness.aliceToken)
            let refused = try await graphQL(client, token: nil)
            let get = try await client.execute(uri: "/graphql?query=%7B%20me%20%7B%20name%20%7D%20%7D", method: .get,
                                               headers: [.authorization: "Bearer \(harness.aliceToken)"])
            let upload = try await client.execute(uri: "/assets", method: .post,
                                                  headers: [.authorization: "Bearer \(harness.aliceToken)", .contentType: "text/plain"],
                                                  body: ByteBuffer(string: "bytes"))
            #expect(ok.status == .ok)
            #expect(refused.status == .unauthorized)
            #expect(get.status == .ok)
            #expect(upload.status == .ok)
            for (name, response) in [("POST", ok), ("401", refused), ("GET", get), ("upload", upload)] {
                #expect(response.headers[Self.contentTypeOptions] == "nosniff", "\(name)")
                #expect(response.headers[.cacheControl] == "no-store", "\(name)")
                #expect(response.headers[Self.strictTransport] == nil, "\(name)")
                #expect(response.headers[HTTPField.Name("X-Request-ID")!] != nil, "\(name)")
            }
            // Health is no user's answer: left as it was.
            let health = try await client.execute(uri: "/health", method: .get)
            #expect(health.headers[.cacheControl] == nil)
        }
    }

    @Test("with an https public URL every answer carries Strict-Transport-Security, refusals included")
    func strictTransportBehindTLS() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(configuration: GatewayConfiguration(publicURL: "https://canopy.example")) { client in
            let ok = try await graphQL(client, token: harness.aliceToken)
            let refused = try await graphQL(client, token: nil)
            let health = try await client.execute(uri: "/health", method: .get)
            let page = try await client.execute(uri: "/share/no-such-token", method: .get)
            for (name, response) in [("POST", ok), ("401", refused), ("health", health), ("share page", page)] {
                #expect(response.headers[Self.strictTransport] == "max-age=31536000", "\(name)")
            }
            #expect(ok.headers[.cacheControl] == "no-store")
        }
    }
}
