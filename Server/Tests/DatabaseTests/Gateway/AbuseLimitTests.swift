@testable import CanopyGatewayTestSupport
@testable import CanopyGateway
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import Testing

/// The per-user and per-document limits (issue 20, part 3) through the
/// real Hummingbird stack: the request rate, the query cost and the
/// subscriptions a user holds. The connection-level limits (headers,
/// slow and idle connections, WebSocket frames and pings) are tested
/// against `canopy serve` as a process in `ConnectionLimitTests`.
@Suite("Abuse limits")
struct AbuseLimitTests {
    @Test("past a user's burst, 429 LIMIT_EXCEEDED with Retry-After; GET counts the same; another user is not slowed; the bucket refills at the rate")
    func rateLimit() async throws {
        let harness = try await GatewayHarness.make()
        // Half a request a second: a request would have to take 1.7 s for 20
        // in a row to stay under it (at 2 a second, a loaded run's half-second
        // requests were never refused).
        let configuration = GatewayConfiguration(limits: AbuseLimits(requestsPerSecond: 0.5, burst: 3))
        try await harness.test(configuration: configuration, rateLimited: true) { client in
            // What a token bucket promises, however slow the machine: from
            // its first request on, a user is served at most the burst plus
            // the rate times the time gone by. Exact instants are checked
            // with a clock given by hand in `bucketArithmetic`; here every
            // figure is a bound, so a loaded machine cannot fail the test.
            let start = ContinuousClock.now
            var served = 0
            func allowance() -> Double { 3 + 0.5 * (ContinuousClock.now - start).inSeconds }

            let post = { () async throws -> (HTTPResponse.Status, [String: Any], HTTPFields) in
                let response = try await client.execute(
                    uri: "/graphql", method: .post,
                    headers: [.contentType: "application/json", .authorization: "Bearer \(harness.aliceToken)"],
                    body: ByteBuffer(string: #"{"query": "{ me { name } }"}"#)
                )
                return (response.status, try responseJSON(response.body), response.headers)
            }
            // Until the first refusal (a fast machine: after the third).
            var refusal: ([String: Any], HTTPFields)?
            for _ in 0..<20 where refusal == nil {
                let (status, body, headers) = try await post()
                if status == .ok { served += 1 } else {
                    #expect(status == .tooManyRequests, "\(body)")
                    refusal = (body, headers)
                }
            }
            #expect(Double(served) <= allowance(), "\(served) served within \(ContinuousClock.now - start)")
            #expect(served >= 3, "the burst of 3 was not served")
            let (body, headers) = try #require(refusal, "20 requests at once were never refused")
            #expect(errorCode(body) == "LIMIT_EXCEEDED", "\(body)")
            #expect((firstError(body)["message"] as? String)?.contains("0.5 requests a second") == true, "\(body)")
            // Under a token's wait (at most two seconds), in whole seconds.
            #expect(["1", "2"].contains(headers[.retryAfter] ?? ""), "Retry-After: \(headers[.retryAfter] ?? "none")")

            // GET draws on the same bucket: it too is refused, within the
            // same allowance.
            var getRefused = false
            for _ in 0..<20 where !getRefused {
                let (status, _, _) = try await client.get("/graphql?query=%7B%20me%20%7B%20name%20%7D%20%7D", token: harness.aliceToken)
                if status == .ok { served += 1 } else {
                    #expect(status == .tooManyRequests)
                    getRefused = true
                }
            }
            #expect(getRefused, "GET was never refused")
            #expect(Double(served) <= allowance(), "\(served) served within \(ContinuousClock.now - start)")

            // Bob has a bucket of his own.
            let (bobStatus, _) = try await client.graphql("{ me { name } }", token: harness.bobToken)
            #expect(bobStatus == .ok)

            // 2.4 s after a refusal at least 1.2 tokens are back: one more
            // is served. Then the bucket empties again, and all that was
            // served stays within the allowance.
            try await Task.sleep(for: .milliseconds(2400))
            let (again, _) = try await client.graphql("{ me { name } }", token: harness.aliceToken)
            #expect(again == .ok)
            served += 1
            var refusedAgain = false
            for _ in 0..<20 where !refusedAgain {
                let (status, _) = try await client.graphql("{ me { name } }", token: harness.aliceToken)
                if status == .ok { served += 1 } else { refusedAgain = true }
            }
            #expect(refusedAgain, "after the refill, 20 requests at once were never refused")
            #expect(Double(served) <= allowance(), "\(served) served within \(ContinuousClock.now - start)")
        }
    }

    @Test("the bucket's arithmetic on a clock given by hand: burst, refusal with its wait, refill at the rate, never above the burst")
    func bucketArithmetic() {
        let limits = UserLimits(AbuseLimits(requestsPerSecond: 2, burst: 3))
        let start = ContinuousClock.now
        for _ in 0..<3 { #expect(limits.takeRequest(for: 1, now: start) == nil) }
        let refused = limits.takeRequest(for: 1, now: start)
        #expect(refused != nil && refused! > .milliseconds(499) && refused! < .milliseconds(501), "wait \(String(describing: refused))")
        #expect(limits.takeRequest(for: 2, now: start) == nil, "another user was slowed")
        // 600 ms on: 1.2 tokens, one request and not two.
        #expect(limits.takeRequest(for: 1, now: start + .milliseconds(600)) == nil)
        let wait = limits.takeRequest(for: 1, now: start + .milliseconds(600))
        #expect(wait != nil && wait! > .milliseconds(399) && wait! < .milliseconds(401), "wait \(String(describing: wait))")
        // An hour idle fills the bucket to the burst, no more.
        let later = start + .seconds(3600)
        for _ in 0..<3 { #expect(limits.takeRequest(for: 1, now: later) == nil) }
        #expect(limits.takeRequest(for: 1, now: later) != nil)
    }

    @Test("concurrent requests that read the clock out of order do not drain a bucket (a later request may hold an earlier instant)")
    func clockOrder() {
        let limits = UserLimits(AbuseLimits(requestsPerSecond: 1_000_000_000, burst: 2))
        let start = ContinuousClock.now
        #expect(limits.takeRequest(for: 1, now: start + .milliseconds(10)) == nil)
        // Read before the one above, locked after it.
        #expect(limits.takeRequest(for: 1, now: start) == nil)
        #expect(limits.takeRequest(for: 1, now: start + .milliseconds(11)) == nil, "the bucket ran backward in time")
    }

    @Test("a document over the query cost is refused before it runs, at the costliest field; variables count")
    func queryCost() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(configuration: GatewayConfiguration(limits: AbuseLimits(maximumQueryCost: 500))) { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Log\") { zoneName } }", token: harness.aliceToken)
            let page = "records(scope: PRIVATE, zone: {zoneName: \"Log\"}, recordType: \"Entry\", limit: $n) { records { recordName } }"
            // One page of 400: 400 rows, within 500.
            let (status, one) = try await client.graphql("query($n: Int) { \(page) }", variables: ["n": 400], token: harness.aliceToken)
            #expect(status == .ok && errorCode(one) == nil, "\(one)")
            // Two aliased pages of 400: 800 rows.
            let (refused, two) = try await client.graphql("query($n: Int) {\n a: \(page)\n b: \(page) }", variables: ["n": 400], token: harness.aliceToken)
            #expect(refused == .badRequest)
            #expect(errorCode(two) == "LIMIT_EXCEEDED", "\(two)")
            #expect((firstError(two)["message"] as? String)?.contains("up to 800 rows, over the limit of 500") == true, "\(two)")
            let location = (firstError(two)["locations"] as? [[String: Any]])?.first
            #expect(location?["line"] as? Int == 2 && location?["column"] as? Int == 2, "\(two)")
            // The same document with smaller pages passes.
            let (small, smaller) = try await client.graphql("query($n: Int) {\n a: \(page)\n b: \(page) }", variables: ["n": 200], token: harness.aliceToken)
            #expect(small == .ok && errorCode(smaller) == nil, "\(smaller)")
        }
        // The default limit (50,000): 30 aliases of 400 records each with its
        // share's participants (30 × 400 × 101 rows) is refused.
        try await harness.test { client in
            let aliases = (0..<30).map { """
                r\($0): records(scope: PRIVATE, zone: {zoneName: "Log"}, recordType: "Entry", limit: 400) { records { share { participants { email } } } }
                """ }.joined(separator: "\n")
            let (status, body) = try await client.graphql("{ \(aliases) }", token: harness.aliceToken)
            #expect(status == .badRequest && errorCode(body) == "LIMIT_EXCEEDED", "\(body)")
            #expect((firstError(body)["message"] as? String)?.contains("up to 1212000 rows") == true, "\(body)")
        }
    }

    @Test("a user holds at most the configured subscriptions over all their sockets; completing one frees a place; another user is not counted")
    func subscriptionsPerUser() async throws {
        let harness = try await GatewayHarness.make()
        let configuration = GatewayConfiguration(limits: AbuseLimits(maximumSubscriptionsPerUser: 2))
        let feed = "subscription { databaseChanged(scope: PRIVATE) { token } }"
        try await harness.test(configuration: configuration, live: true) { client in
            try await client.subscriptionSocket(token: harness.aliceToken) { first, sendFirst in
                try await sendFirst("{\"type\":\"connection_init\"}")
                #expect(try await first.next()?["type"] as? String == "connection_ack")
                try await sendFirst(try subscribeMessage(id: "a", feed))
                #expect(try await first.next()?["type"] as? String == "next")
                try await client.subscriptionSocket(token: harness.aliceToken) { second, sendSecond in
                    try await sendSecond("{\"type\":\"connection_init\"}")
                    #expect(try await second.next()?["type"] as? String == "connection_ack")
                    try await sendSecond(try subscribeMessage(id: "b", feed))
                    #expect(try await second.next()?["type"] as? String == "next")
                    // A third, on either socket, is refused.
                    try await sendSecond(try subscribeMessage(id: "c", feed))
                    let refused = try #require(try await second.next())
                    #expect(refused["type"] as? String == "error" && refused["id"] as? String == "c", "\(refused)")
                    let error = (refused["payload"] as? [[String: Any]])?.first
                    #expect((error?["extensions"] as? [String: Any])?["code"] as? String == "LIMIT_EXCEEDED", "\(refused)")
                    #expect((error?["message"] as? String)?.contains("at most 2 subscriptions") == true, "\(refused)")
                    // Bob is not counted with alice.
                    try await client.subscriptionSocket(token: harness.bobToken) { bob, sendBob in
                        try await sendBob("{\"type\":\"connection_init\"}")
                        #expect(try await bob.next()?["type"] as? String == "connection_ack")
                        try await sendBob(try subscribeMessage(id: "x", feed))
                        #expect(try await bob.next()?["type"] as? String == "next")
                    }
                    // Completing one frees its place.
                    try await sendSecond("{\"id\":\"b\",\"type\":\"complete\"}")
                    var accepted = false
                    for _ in 0..<50 where !accepted {
                        try await Task.sleep(for: .milliseconds(100))
                        try await sendSecond(try subscribeMessage(id: "d\(UUID().uuidString.prefix(4))", feed))
                        accepted = try await second.next()?["type"] as? String == "next"
                    }
                    #expect(accepted, "a completed subscription's place was not freed")
                }
            }
            // Both sockets closed: every place is free again.
            try await client.subscriptionSocket(token: harness.aliceToken) { socket, send in
                try await send("{\"type\":\"connection_init\"}")
                #expect(try await socket.next()?["type"] as? String == "connection_ack")
                var accepted = 0
                for attempt in 0..<50 where accepted < 2 {
                    try await send(try subscribeMessage(id: "e\(attempt)", feed))
                    if try await socket.next()?["type"] as? String == "next" { accepted += 1 } else { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(accepted == 2, "closed sockets' subscriptions still counted")
            }
        }
    }
}
