@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import NIOCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `canopy serve --auth-config … --cors-origin …` as an operator runs it:
/// a configuration that cannot work stops it before it listens; one that
/// works signs a person in from a browser origin.
@Suite("canopy serve with identity providers", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct ServeIdentityTests {
    @Test("a configuration that cannot work stops serve at start, naming the file, the provider and the fault")
    func badConfiguration() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-auth-\(UUID().uuidString).json").path
        try Data(#"{"providers": [{"name": "apple", "issuer": "https://appleid.apple.com", "audiences": ["x"]}]}"#.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try CanopyBinary.run(["serve", "--database-url", endpoint.url, "--port", "1", "--auth-config", path])
        #expect(!result.succeeded)
        #expect(result.output.contains("auth config \(path): provider 'apple': no key source"), "\(result.output)")
        let origin = try CanopyBinary.run(["serve", "--database-url", endpoint.url, "--cors-origin", "*"])
        #expect(!origin.succeeded && origin.output.contains("a wildcard or null is never allowed"), "\(origin.output)")
    }

    @Test("a person signs in with a provider's token through canopy serve, from an allowed browser origin")
    func signInThroughServe() async throws {
        let endpoint = try await TestDatabase.shared.emptyDatabase()
        let provider = try IdentityProviderProcess()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-auth-\(UUID().uuidString).json").path
        let config = """
            {"providers": [{"name": "idp", "issuer": "\(IdentityProviderProcess.issuer)", "audiences": ["\(IdentityProviderProcess.audience)"], "jwksURL": "\(provider.jwksURL)"}]}
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let port = 20000 + Int((getpid() + 7) % 20000)
        let started = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, [
            "--auth-config", path, "--cors-origin", "https://app.example.com",
        ])
        defer { kill(started.pid, SIGTERM) }
        var ready = false
        for _ in 0..<150 where !ready {
            try await Task.sleep(for: .milliseconds(100))
            ready = (try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/health"), timeout: .seconds(1)))?.status == .ok
        }
        #expect(ready, "the server answered /health")
        let token = try await provider.mint("rsa1", IdentityProviderProcess.claims("served-1", ["name": "Sam Served"]))
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/graphql")
        request.method = .POST
        request.headers.add(name: "Origin", value: "https://app.example.com")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.body = .bytes(ByteBuffer(string: #"{"query": "{ me { name } }"}"#))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
        #expect(response.status == .ok && body.contains("Sam Served"), "\(body)")
        #expect(response.headers["Access-Control-Allow-Origin"] == ["https://app.example.com"])

        kill(started.pid, SIGTERM)
        let result = try await started.exit()
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("fetched the key set"), "the keys were fetched at start: \(result.output)")
        #expect(!result.output.contains(token.split(separator: ".")[2]), "no token in the server's log")
    }
}
