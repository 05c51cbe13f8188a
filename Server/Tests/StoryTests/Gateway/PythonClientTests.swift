@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
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
        let script = "\(Repository.root)/Server/Tests/python/gql_client.py"
        try await harness.test(configuration: GatewayConfiguration(port: 0), live: true) { client in
            let port = try #require(client.port)
            let result = try await Subprocess.start("/usr/bin/env", ["python3", script, "http://127.0.0.1:\(port)/graphql", harness.aliceToken]).finished()
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

    @Test("gql's websockets transport subscribes over graphql-transport-ws and is sent the record committed over HTTP")
    func gqlSubscription() async throws {
        let harness = try await GatewayHarness.make()
        let script = "\(Repository.root)/Server/Tests/python/gql_subscription.py"
        try await harness.test(configuration: GatewayConfiguration(port: 0), live: true) { client in
            let port = try #require(client.port)
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"FromPython\") { zoneName } }", token: harness.aliceToken)
            let (start, _) = try await client.zoneChanges("FromPython", since: nil, token: harness.aliceToken)
            let since = try #require(start?.token)
            let result = try await Subprocess.start("/usr/bin/env", ["python3", script, "http://127.0.0.1:\(port)/graphql", harness.aliceToken, since]).finished()
            #expect(result.succeeded, "\(result.output)")
            let line = result.output.split(separator: "\n").last.map(String.init) ?? ""
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            let event = (json["event"] as? [String: Any])?["zoneChanged"] as? [String: Any]
            let changed = event?["changed"] as? [[String: Any]]
            #expect(changed?.compactMap { $0["recordName"] as? String } == ["live1"], "\(result.output)")
            #expect((changed?.first?["fields"] as? [String: Any])?["text"] as? String == "pushed")
            #expect(event?["token"] is String)
        }
    }
}
