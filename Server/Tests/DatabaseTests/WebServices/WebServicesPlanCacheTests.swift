@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyTestSupport
import Foundation
import HTTPTypes
import Testing

/// Web Services' `records/lookup` (issue 66) and `records/query` (issue 69)
/// through the plan cache, as GraphQL's `lookup` and `records` go: a
/// request of a shape seen before binds its own zone, names or filter
/// values, limit, cursor, zone ID dictionary and request id into the
/// statement made then. The cache verifies each hit against a new plan and fails the
/// request on a difference (``PlanCacheVerification/strict``), and every
/// answer is compared with a gateway's without the cache.
@Suite("Web Services: the plan cache", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesPlanCacheTests {
    /// An answer's text with the request ids blanked, to compare two gateways'.
    static func comparable(_ answer: WebServicesAnswer) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: answer.body, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self).replacingOccurrences(of: #""uuid":"[^"]*""#, with: #""uuid":"-""#, options: .regularExpression)
    }

    /// A fresh harness and its API token, with a configuration whose
    /// strict cache the test reads, and one without a cache.
    static func gateways() async throws -> (GatewayHarness, String, PlanCache, GatewayConfiguration, GatewayConfiguration) {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        let plans = PlanCache(capacity: 64, verification: .strict)
        var cached = WebServicesFixture.configuration()
        cached.planCache = plans
        var uncached = WebServicesFixture.configuration()
        uncached.planCacheSize = 0
        return (harness, token, plans, cached, uncached)
    }

    @Test("records/lookup: the second request of a shape is a hit whatever its user, zone, names and request id, each answered as without the cache; another desiredKeys is another shape; records with desiredKeys of their own are planned each time")
    func lookup() async throws {
        let (harness, token, plans, cached, uncached) = try await Self.gateways()
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

    @Test("records/query: the second request of a shape is a hit whatever its user, zone, filter values and limit, each answered as without the cache; a cursor, numbersAsStrings, zoneWide, desiredKeys or another filter is another shape")
    func query() async throws {
        let (harness, token, plans, cached, uncached) = try await Self.gateways()
        @Sendable func body(zone: String? = "Query", above rank: Int, extra: String = "", filters: String = "") -> String {
            let zoneID = zone.map { #""zoneID": {"zoneName": "\#($0)"}, "# } ?? ""
            return #"{\#(zoneID)"query": {"recordType": "Item", "filterBy": [{"fieldName": "rank", "comparator": "GREATER_THAN", "fieldValue": {"value": \#(rank)}}\#(filters)], "sortBy": [{"fieldName": "rank", "ascending": true}]}\#(extra)}"#
        }
        // (who asks, the body, what the cache should have done: hit or miss).
        let requests: [(user: String, body: String, hit: Bool)] = [
            (harness.aliceToken, body(above: 1), false),
            (harness.bobToken, body(above: 2), true),
            (harness.aliceToken, body(zone: nil, above: 0), true),
            (harness.aliceToken, body(above: 0, extra: #", "resultsLimit": 1"#), true),
            (harness.aliceToken, body(above: 1, extra: #", "numbersAsStrings": true"#), false),
            (harness.aliceToken, body(zone: nil, above: 1, extra: #", "zoneWide": true"#), false),
            (harness.aliceToken, body(above: 1, extra: #", "desiredKeys": ["title"]"#), false),
            (harness.aliceToken, body(above: 1, filters: #", {"fieldName": "title", "comparator": "EQUALS", "fieldValue": {"value": "two"}}"#), false),
            (harness.bobToken, body(above: 0, filters: #", {"fieldName": "title", "comparator": "EQUALS", "fieldValue": {"value": "three"}}"#), true),
        ]
        let (answers, pages) = try await harness.test(configuration: cached, live: true) { client in
            func call(_ subpath: String, _ body: String, as user: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: user)
            }
            for (user, prefix) in [(harness.aliceToken, "a"), (harness.bobToken, "b")] {
                _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Query"}}}]}"#, as: user)
                for (zone, first) in [("Query", 1), ("_defaultZone", 4)] {
                    let operations = (first..<first + 3).map { rank in
                        #"{"operationType": "create", "record": {"recordType": "Item", "recordName": "\#(prefix)\#(rank)", "fields": {"title": {"value": "\#(["one", "two", "three", "four", "five", "six"][rank - 1])"}, "rank": {"value": \#(rank)}}}}"#
                    }
                    let saved = try await call("private/records/modify", #"{"zoneID": {"zoneName": "\#(zone)"}, "operations": [\#(operations.joined(separator: ","))]}"#, as: user)
                    #expect(saved.records.count == 3 && saved.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(saved.body)")
                }
            }
            var answers: [WebServicesAnswer] = []
            for (index, request) in requests.enumerated() {
                let before = plans.statistics
                let answer = try await call("private/records/query", request.body, as: request.user)
                #expect(answer.status == .ok, "request \(index): \(answer.body)")
                let after = plans.statistics
                #expect(after.hits - before.hits == (request.hit ? 1 : 0) && after.misses - before.misses == (request.hit ? 0 : 1),
                        "request \(index) should be a \(request.hit ? "hit" : "miss"): \(before) → \(after)")
                answers.append(answer)
            }
            // The limited page's cursor: a query with one is another shape,
            // and the next with one of the same kinds is a hit.
            let cursor = try #require(answers[3].body["continuationMarker"] as? String, "\(answers[3].body)")
            var pages: [String] = []
            for hit in [false, true] {
                let next = body(above: 0, extra: #", "resultsLimit": 1, "continuationMarker": "\#(cursor)""#)
                pages.append(next)
                let before = plans.statistics
                let answer = try await call("private/records/query", next, as: harness.aliceToken)
                #expect(answer.status == .ok, "\(answer.body)")
                #expect(plans.statistics.hits - before.hits == (hit ? 1 : 0), "a cursor's \(hit ? "second" : "first") page: \(before) → \(plans.statistics)")
                answers.append(answer)
            }
            #expect(plans.statistics.mismatches == 0)
            return (answers, pages)
        }

        // What each request got, from its own values.
        let names = answers.map { answer in answer.records.map { $0["recordName"] as? String ?? "?" } }
        #expect(names[0] == ["a2", "a3"], "\(answers[0].body)")
        #expect(names[1] == ["b3"], "bob's own records, above his own value: \(answers[1].body)")
        #expect(names[2] == ["a4", "a5", "a6"], "the default zone's: \(answers[2].body)")
        #expect(names[3] == ["a1"], "one record a page: \(answers[3].body)")
        #expect(Set(names[5]) == ["a2", "a3", "a4", "a5", "a6"], "every zone's: \(answers[5].body)")
        #expect(names[7] == ["a2"] && names[8] == ["b3"], "each filter's own values: \(names[7]), \(names[8])")
        #expect(names[9] == ["a2"] && names[10] == ["a2"], "the page after the cursor: \(names[9]), \(names[10])")
        let zones = answers[0...2].map { ($0.records.first?["zoneID"] as? [String: Any])?["zoneName"] as? String }
        #expect(zones == ["Query", "Query", "_defaultZone"], "each answer names its own zone: \(zones)")
        let rank = (answers[4].records.first?["fields"] as? [String: Any]).flatMap { $0["rank"] as? [String: Any] }?["value"]
        #expect(rank as? String == "2", "numbersAsStrings: \(answers[4].body)")
        #expect(((answers[6].records.first?["fields"] as? [String: Any]).map { Set($0.keys) }) == ["title"], "\(answers[6].body)")

        // The same requests through a gateway without the cache: the same answers.
        try await harness.test(configuration: uncached, live: true) { client in
            for (index, request) in (requests.map { ($0.user, $0.body) } + pages.map { (harness.aliceToken, $0) }).enumerated() {
                let cold = try await client.webServices("private/records/query", request.1, apiToken: token, webAuthToken: request.0)
                #expect(try Self.comparable(cold) == Self.comparable(answers[index]), "request \(index)")
            }
        }
    }
}
