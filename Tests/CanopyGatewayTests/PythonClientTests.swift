import CanopyGateway
import CanopyStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import Testing

/// A real, independent GraphQL client (Python's `gql`, from PyPI) pointed at
/// a live gateway: it introspects the schema, validates its documents
/// against it, and runs queries and mutations.
@Suite("Python gql client")
struct PythonClientTests {
    @Test("gql fetches the schema by introspection and runs queries and mutations")
    func gqlClient() async throws {
        let harness = try await GatewayHarness.make()
        let script = "\(TestDatabase.packageRoot)/Tests/python/gql_client.py"
        try await harness.test(configuration: GatewayConfiguration(port: 0), live: true) { client in
            let port = try #require(client.port)
            let result = try Subprocess.start("/usr/bin/env", ["python3", script, "http://127.0.0.1:\(port)/graphql", harness.aliceToken]).wait()
            #expect(result.succeeded, "\(result.output)")
            let line = result.output.split(separator: "\n").last.map(String.init) ?? ""
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            #expect((json["types"] as? [String])?.contains("RecordPage") == true, "\(result.output)")
            #expect(((json["me"] as? [String: Any])?["me"] as? [String: Any])?["name"] as? String == "alice")
            let found = ((json["found"] as? [String: Any])?["records"] as? [String: Any])?["records"] as? [[String: Any]]
            #expect(found?.first?["recordName"] as? String == "py1", "\(result.output)")
            #expect(json["rejected_locally"] as? Bool == true)
        }
    }
}
