@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// The plan cache through the real stack (issue 51): requests answered from
/// a cached plan are answered exactly as a gateway without the cache answers
/// them, for each user, each schema version and each shape of variables.
/// Every gateway of the tests verifies each hit against a new plan and
/// fails the request on a difference (``PlanCacheVerification/strict``).
@Suite("Plan cache")
struct PlanCacheTests {
    static var uncached: GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.planCacheSize = 0
        return configuration
    }

    static let records = """
        query($z: String!, $f: String, $a: JSON, $c: String, $k: [String!], $all: Boolean!) {
          records(scope: PRIVATE, zone: {zoneName: $z}, recordType: "Fast", filter: $f, args: $a, sort: [{field: "hours"}], limit: 2, cursor: $c) {
            records { recordName fields(keys: $k) modified @include(if: $all) { userRecordName } } cursor } }
        """

    /// The raw body of a POST to /graphql, the request id's value blanked.
    static func body(_ client: any TestClientProtocol, _ query: String, _ variables: String, token: String) async throws -> String {
        let payload = try JSONSerialization.data(withJSONObject: ["query": query, "variables": try JSONSerialization.jsonObject(with: Data(variables.utf8))])
        let response = try await client.execute(
            uri: "/graphql", method: .post, headers: [.contentType: "application/json", .authorization: "Bearer \(token)"], body: ByteBuffer(bytes: payload)
        )
        let text = String(buffer: response.body)
        return text.replacingOccurrences(of: #""requestId":"[^"]*""#, with: #""requestId":"-""#, options: .regularExpression)
    }

    static func seed(_ client: any TestClientProtocol, token: String, prefix: String) async throws {
        _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
        _ = try await save(client, token: token, (1...5).map { fast("\(prefix)\($0)", hours: $0, end: 1_700_000_000_000 + Int64($0)) })
    }

    @Test("two users, one document: the second is a hit, and each sees only their own records, as without the cache")
    func twoUsers() async throws {
        let harness = try await GatewayHarness.make()
        let plans = PlanCache(capacity: 64, verification: .strict)
        var cached = GatewayConfiguration()
        cached.planCache = plans
        let uncached = Self.uncached
        let variables = #"{"z": "Fasting", "f": "hours > %@", "a": [1], "all": true}"#
        try await harness.test(configuration: cached) { client, _ in
            try await Self.seed(client, token: harness.aliceToken, prefix: "alice")
            try await Self.seed(client, token: harness.bobToken, prefix: "bob")
            let alice = try await Self.body(client, Self.records, variables, token: harness.aliceToken)
            #expect(plans.statistics.misses == 1 && plans.statistics.hits == 0)
            let bob = try await Self.body(client, Self.records, variables, token: harness.bobToken)
            #expect(plans.statistics.hits == 1, "\(plans.statistics)")
            #expect(alice.contains("alice2") && !alice.contains("bob"), "\(alice)")
            #expect(bob.contains("bob2") && !bob.contains("alice"), "\(bob)")
            try await harness.test(configuration: uncached) { cold, _ in
                let coldAlice = try await Self.body(cold, Self.records, variables, token: harness.aliceToken)
                let coldBob = try await Self.body(cold, Self.records, variables, token: harness.bobToken)
                #expect(coldAlice == alice)
                #expect(coldBob == bob)
            }
        }
        #expect(plans.statistics.mismatches == 0)
    }

    @Test("two shapes of one document's variables: two plans, each reused, pages joined by the cursor as without the cache")
    func variableShapes() async throws {
        let harness = try await GatewayHarness.make()
        let plans = PlanCache(capacity: 64, verification: .strict)
        var cached = GatewayConfiguration()
        cached.planCache = plans
        let uncached = Self.uncached
        try await harness.test(configuration: cached) { client, _ in
            try await Self.seed(client, token: harness.aliceToken, prefix: "r")
            let first = #"{"z": "Fasting", "all": false}"#
            let page1 = try await Self.body(client, Self.records, first, token: harness.aliceToken)
            let cursor = try #require(((try responseJSON(ByteBuffer(string: page1))["data"] as? [String: Any])?["records"] as? [String: Any])?["cursor"] as? String)
            // Another shape: keys as a list, a cursor, a filter.
            let second = #"{"z": "Fasting", "k": ["hours"], "c": "\#(cursor)", "all": false}"#
            let page2 = try await Self.body(client, Self.records, second, token: harness.aliceToken)
            let again = try await Self.body(client, Self.records, first, token: harness.aliceToken)
            #expect(again == page1)
            #expect(plans.statistics.entries == 2 && plans.statistics.hits == 1, "\(plans.statistics)")
            #expect(page1.contains("\"r1\"") && page1.contains("\"r2\"") && page2.contains("\"r3\"") && page2.contains("\"r4\""), "\(page1) \(page2)")
            #expect(!page2.contains("endDate"), "fields(keys: [hours]) only: \(page2)")
            try await harness.test(configuration: uncached) { cold, _ in
                let coldPage1 = try await Self.body(cold, Self.records, first, token: harness.aliceToken)
                let coldPage2 = try await Self.body(cold, Self.records, second, token: harness.aliceToken)
                #expect(coldPage1 == page1)
                #expect(coldPage2 == page2)
            }
        }
        #expect(plans.statistics.mismatches == 0)
    }

    @Test("a schema applied between two requests: the second is planned anew under the new schema")
    func schemaApplied() async throws {
        let harness = try await GatewayHarness.make()
        let plans = PlanCache(capacity: 64, verification: .strict)
        var cached = GatewayConfiguration()
        cached.planCache = plans
        @Sendable func schema(_ moodType: String) -> String {
            "DEFINE SCHEMA RECORD TYPE Fast (hours INT64 QUERYABLE SORTABLE, endDate TIMESTAMP, note STRING, mood \(moodType) QUERYABLE, GRANT WRITE TO \"_creator\", GRANT READ TO \"_world\");"
        }
        #expect(try schemaCommand(["apply"], file: schema("STRING"), on: harness.endpoint).succeeded)
        try await harness.test(configuration: cached, schemaCacheTime: .zero) { client, _ in
            try await Self.seed(client, token: harness.aliceToken, prefix: "r")
            let byMood = "query($a: JSON) { records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\", filter: \"mood == %@\", args: $a) { records { recordName } } }"
            let asText = try await client.call("records", byMood, ["a": ["calm"]], token: harness.aliceToken)
            #expect(asText.code == nil && asText.object["records"] as? [Any] != nil, "\(asText.body)")
            let missesBefore = plans.statistics.misses
            // No record holds mood, so it may change type: STRING to INT64.
            let applied = try schemaCommand(["apply"], file: schema("INT64"), on: harness.endpoint)
            #expect(applied.succeeded, "\(applied.output)")
            let asNumber = try await client.call("records", byMood, ["a": [3]], token: harness.aliceToken)
            #expect(asNumber.code == nil, "a number compares with the INT64 field: \(asNumber.body)")
            #expect(plans.statistics.misses == missesBefore + 1, "planned anew: \(plans.statistics)")
            #expect(plans.statistics.schemaEvictions >= 1, "the old schema's plans dropped: \(plans.statistics)")
            let text = try await client.call("records", byMood, ["a": ["calm"]], token: harness.aliceToken)
            #expect(text.code == "INVALID_ARGUMENTS", "a string no longer compares with mood: \(text.body)")
        }
        #expect(plans.statistics.mismatches == 0)
    }

    @Test("bounded: past its size the least recently used plan goes, and answers stay right")
    func bounded() async throws {
        let harness = try await GatewayHarness.make()
        let plans = PlanCache(capacity: 2, verification: .strict)
        var cached = GatewayConfiguration()
        cached.planCache = plans
        try await harness.test(configuration: cached) { client, _ in
            try await Self.seed(client, token: harness.aliceToken, prefix: "r")
            for limit in [1, 2, 3, 1] {
                let query = "{ lookup(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordNames: [\"r\(limit)\"]) { recordName record { recordName } } }"
                let answer = try await client.call("lookup", query, token: harness.aliceToken)
                #expect((answer.list.first?["record"] as? [String: Any])?["recordName"] as? String == "r\(limit)", "\(answer.body)")
            }
        }
        #expect(plans.statistics.entries == 2)
        #expect(plans.statistics.capacityEvictions == 2, "r1's plan went for r3's, then r2's for r1's again: \(plans.statistics)")
        #expect(plans.statistics.hits == 0)
    }
}
