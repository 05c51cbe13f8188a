@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyTestSupport
import Foundation
import HTTPTypes
import Testing

/// Web Services' `records/lookup` through the plan cache (issue 66), as
/// GraphQL's `lookup` goes: a request of a shape seen before binds its own
/// zone, names, zone ID dictionary and request id into the statement made
/// then. The cache verifies each hit against a new plan and fails the
/// request on a difference (``PlanCacheVerification/strict``), and every
/// answer is compared with a gateway's without the cache.
@Suite("Web Services: the plan cache", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesPlanCacheTests {
    /// An answer's text with the request ids blanked, to compare two gateways'.
    static func comparable(_ answer: WebServicesAnswer) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: answer.body, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self).replacingOccurrences(of: #""uuid":"[^"]*""#, with: #""uuid":"-""#, options: .regularExpression)
    }

    @Test("records/lookup: the second request of a shape is a hit whatever its user, zone, names and request id, each answered as without the cache; another desiredKeys is another shape; records with desiredKeys of their own are planned each time")
    func lookup() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        let plans = PlanCache(capacity: 64, verification: .strict)
        var cached = WebServicesFixture.configuration()
        cached.planCache = plans
        var uncached = WebServicesFixture.configuration()
        uncached.planCacheSize = 0
        let requests: [(user: String, body: String)] = [
            (harness.aliceToken, #"{"zoneID": {"zoneName": "Cache"}, "records": [{"recordName": "a1"}, {"recordName": "gone"}]}"#),
            (harness.bobToken, #"{"zoneID": {"zoneName": "Cache"}, "records": [{"recordName": "b1"}, {"recordName": "a1"}]}"#),
            (harness.aliceToken, #"{"records": [{"recordName": "d1"}, {"recordName": "gone"}]}"#),
            (harness.aliceToken, #"{"zoneID": {"zoneName": "Cache"}, "records": [{"recordName": "a2"}], "desiredKeys": ["title"]}"#),
            (harness.aliceToken, #"{"zoneID": {"zoneName": "Cache"}, "records": [{"recordName": "a1", "desiredKeys": ["rank"]}]}"#),
        ]
        let answers = try await harness.test(configuration: cached, live: true) { client in
            func call(_ subpath: String, _ body: String, as user: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: user)
            }
            for (user, prefix) in [(harness.aliceToken, "a"), (harness.bobToken, "b")] {
                _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Cache"}}}]}"#, as: user)
                let saved = try await call("private/records/modify", """
                    {"zoneID": {"zoneName": "Cache"}, "operations": [
                      {"operationType": "create", "record": {"recordType": "Item", "recordName": "\(prefix)1", "fields": {"title": {"value": "one"}, "rank": {"value": 1}}}},
                      {"operationType": "create", "record": {"recordType": "Item", "recordName": "\(prefix)2", "fields": {"title": {"value": "two"}, "rank": {"value": 2}}}}]}
                    """, as: user)
                #expect(saved.records.count == 2 && saved.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(saved.body)")
            }
            let inDefault = try await call("private/records/modify",
                                           #"{"operations": [{"operationType": "create", "record": {"recordType": "Item", "recordName": "d1", "fields": {"title": {"value": "default"}}}}]}"#,
                                           as: harness.aliceToken)
            #expect(inDefault.records.first?["serverErrorCode"] == nil, "\(inDefault.body)")

            var answers: [WebServicesAnswer] = []
            var seen: [PlanCache.Statistics] = []
            for (user, body) in requests {
                let answer = try await call("private/records/lookup", body, as: user)
                #expect(answer.status == .ok, "\(answer.body)")
                answers.append(answer)
                seen.append(plans.statistics)
            }
            #expect(seen[0].misses == 1 && seen[0].hits == 0, "the first of its shape plans: \(seen[0])")
            #expect(seen[1].hits == 1 && seen[2].hits == 2, "another user, another zone: the same shape, hits: \(seen)")
            #expect(seen[3].misses == 2 && seen[3].hits == 2, "other desiredKeys: another shape: \(seen[3])")
            #expect(seen[4].misses == 2 && seen[4].hits == 2, "desiredKeys per record: not through the cache: \(seen[4])")
            #expect(plans.statistics.mismatches == 0)
            return answers
        }

        // What each request got, from its own values.
        let names = answers.map { answer in
            answer.records.map { ($0["recordName"] as? String ?? "?") + (($0["serverErrorCode"] as? String).map { ":" + $0 } ?? "") }
        }
        #expect(names[0] == ["a1", "gone:NOT_FOUND"], "\(answers[0].body)")
        #expect(names[1] == ["b1", "a1:NOT_FOUND"], "bob sees his own records only: \(answers[1].body)")
        #expect(names[2] == ["d1", "gone:NOT_FOUND"], "\(answers[2].body)")
        let zones = answers[0...2].map { ($0.records.first?["zoneID"] as? [String: Any])?["zoneName"] as? String }
        #expect(zones == ["Cache", "Cache", "_defaultZone"], "each answer names its own zone: \(zones)")
        let missingIDs = [answers[0], answers[2]].map { $0.records.last?["uuid"] as? String }
        #expect(missingIDs[0] != nil && missingIDs[0] != missingIDs[1], "each missing record's error carries its own request's id: \(missingIDs)")
        #expect(((answers[3].records.first?["fields"] as? [String: Any]).map { Set($0.keys) }) == ["title"], "\(answers[3].body)")
        #expect(((answers[4].records.first?["fields"] as? [String: Any]).map { Set($0.keys) }) == ["rank"], "\(answers[4].body)")

        // The same requests through a gateway without the cache: the same answers.
        try await harness.test(configuration: uncached, live: true) { client in
            for (index, (user, body)) in requests.enumerated() {
                let cold = try await client.webServices("private/records/lookup", body, apiToken: token, webAuthToken: user)
                #expect(try Self.comparable(cold) == Self.comparable(answers[index]), "request \(index)")
            }
        }
    }
}
