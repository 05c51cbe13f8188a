@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyTestSupport
import HummingbirdTesting
import Testing

/// `--introspection` (issue 48): who may read the schema.
@Suite("Introspection access")
struct IntrospectionAccessTests {
    @Test("--introspection signed-in refuses a caller without a token (401); off refuses everyone (403); __typename still answers")
    func introspectionAccess() async throws {
        let harness = try await GatewayHarness.make()
        var signedIn = GatewayConfiguration()
        signedIn.limits.introspection = .signedIn
        try await harness.test(configuration: signedIn) { client in
            let anonymous = try await HardeningTests.post(client, "{ __schema { queryType { name } } }", token: nil)
            #expect(anonymous.status == .unauthorized && errorCode(anonymous.body) == "NOT_AUTHENTICATED", "\(anonymous.text)")
            let alice = try await HardeningTests.post(client, "{ __schema { queryType { name } } }", token: harness.aliceToken)
            #expect(alice.status == .ok && alice.text.contains("\"Query\""), "\(alice.text)")
        }
        var off = GatewayConfiguration()
        off.limits.introspection = .off
        try await harness.test(configuration: off) { client in
            let alice = try await HardeningTests.post(client, "{ __type(name: \"Record\") { name } }", token: harness.aliceToken)
            #expect(alice.status == .forbidden && errorCode(alice.body) == "PERMISSION_FAILURE", "\(alice.text)")
            let typename = try await HardeningTests.post(client, "{ __typename }", token: harness.aliceToken)
            #expect(typename.status == .ok && typename.text.contains("Query"), "\(typename.text)")
        }
    }

}
