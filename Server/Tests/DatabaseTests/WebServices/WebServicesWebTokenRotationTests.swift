@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import PostgresNIO
import Testing

/// The web auth token rotates (issue 66, item 10; docs/WEB_SERVICES.md,
/// "The web token rotates"): an answer to a request that carried one hands
/// back, in `X-Apple-CloudKit-Web-Auth-Token`, the token to send next, as
/// CloudKit's answers do. A secret older than the rotation age is replaced;
/// the one replaced still works for the overlap (or until the next
/// rotation), then is refused as a signed-out request is.
@Suite("Web Services: the web token rotates", .serialized)
struct WebServicesWebTokenRotationTests {
    static let header = HTTPField.Name("X-Apple-CloudKit-Web-Auth-Token")!

    static func configuration(age: Duration, overlap: Duration) -> GatewayConfiguration {
        var configuration = WebServicesFixture.configuration()
        configuration.webServices?.webTokenRotationAge = age
        configuration.webServices?.webTokenOverlap = overlap
        return configuration
    }

    /// A web auth token of alice's, as the sign-in page issues it.
    static func webToken(_ client: some TestClientProtocol, _ harness: GatewayHarness) async throws -> String {
        let issued = try await client.call("issueToken", "mutation { issueToken(form: WEB_AUTH) { token } }", token: harness.aliceToken)
        return try #require(issued.object["token"] as? String, "\(issued.body)")
    }

    @Test("each answer hands back the token to send next: a new secret under the same prefix; the replaced one still works (its answers carry no token) until the next rotation, then is 421; of requests racing with one token, one rotates; revoking the prefix ends the current and the previous secret alike")
    func rotation() async throws {
        let harness = try await GatewayHarness.make()
        let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: Self.configuration(age: .zero, overlap: .seconds(600)), live: true) { client in
            @Sendable func current(_ token: String) async throws -> WebServicesAnswer {
                try await client.webServices("private/users/current", apiToken: apiToken, webAuthToken: token, method: .get)
            }
            let first = try await Self.webToken(client, harness)
            let answered = try await current(first)
            #expect(answered.status == .ok && answered.body["userRecordName"] as? String == harness.alice.userRecordName, "\(answered.body)")
            let second = try #require(answered.headers[Self.header], "the answer carries the token to send next")
            #expect(second != first && second.count == 128 && second.prefix(16) == first.prefix(16),
                    "a new secret under the same prefix (what lists and revokeToken name)")

            // The replaced secret, within the overlap: it works, and its
            // answer hands back nothing (the first answer's token is the one).
            let late = try await current(first)
            #expect(late.status == .ok && late.headers[Self.header] == nil, "\(late.status) \(late.body) \(late.headers)")

            // The new token works, and rotates in turn; the first is now two
            // rotations back and refused as a signed-out request is.
            let again = try await current(second)
            #expect(again.status == .ok, "\(again.body)")
            let third = try #require(again.headers[Self.header])
            #expect(third != second && third != first)
            let stale = try await current(first)
            #expect(stale.status.code == 421 && stale.body["serverErrorCode"] as? String == "AUTHENTICATION_REQUIRED", "\(stale.status) \(stale.body)")
            #expect(try await current(second).status == .ok, "the previous secret holds until the next rotation")

            // Five requests at once with one token: all answered, one rotates.
            let racing = try await withThrowingTaskGroup(of: WebServicesAnswer.self) { group in
                for _ in 0..<5 { group.addTask { try await current(third) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(racing.allSatisfy { $0.status == .ok }, "\(racing.map(\.status))")
            let handedBack = racing.compactMap { $0.headers[Self.header] }
            #expect(handedBack.count == 1, "one of the racing requests rotated: \(handedBack.count) tokens handed back")
            let fourth = try #require(handedBack.first)
            let usedFourth = try await current(fourth)
            #expect(usedFourth.status == .ok)
            let fifth = try #require(usedFourth.headers[Self.header])

            // Signing out revokes the prefix: every secret of the token ends,
            // the current one (fifth) and the one it replaced (fourth).
            // (fifth is not sent before: with a rotation age of zero it would rotate.)
            let liveFourth = try await current(fourth)
            #expect(liveFourth.status == .ok && liveFourth.headers[Self.header] == nil, "the replaced secret lives before the revocation")
            let revoked = try await client.call("revokeToken", "mutation { revokeToken(prefix: \"cnp_\(first.prefix(16))\") }", token: harness.aliceToken)
            #expect(revoked.data as? Bool == true, "\(revoked.body)")
            for token in [fifth, fourth] {
                let refused = try await eventually { try await current(token).status.code == 421 }
                #expect(refused, "the revoked token's secrets, current and previous, are refused")
            }
        }
    }

    @Test("the replaced secret stops working when the overlap ends; the token that replaced it goes on")
    func overlapEnds() async throws {
        let harness = try await GatewayHarness.make()
        let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: Self.configuration(age: .seconds(3600), overlap: .seconds(1)), live: true) { client in
            @Sendable func current(_ token: String) async throws -> WebServicesAnswer {
                try await client.webServices("private/users/current", apiToken: apiToken, webAuthToken: token, method: .get)
            }
            let first = try await Self.webToken(client, harness)
            // An hour's age: the fresh token is handed back as it is.
            let young = try await current(first)
            #expect(young.status == .ok && young.headers[Self.header] == first, "\(young.headers)")
            // Aged by the database (as if issued an hour ago), it rotates.
            let selector = String(first.prefix(16))
            try await TestDatabase.withConnection(harness.endpoint) { connection in
                _ = try await connection.query(
                    "UPDATE canopy.api_tokens SET created_at = now() - interval '2 hours' WHERE selector = \(selector)",
                    logger: Logger(label: "canopy.tests")
                ).collect()
            }
            // (Once the gateway's token cache, a few seconds, has let go of
            // what it read before.)
            var next = first
            let deadline = ContinuousClock.now + .seconds(60)
            while next == first && ContinuousClock.now < deadline {
                let aged = try await current(first)
                #expect(aged.status == .ok, "\(aged.status) \(aged.body)")
                next = try #require(aged.headers[Self.header], "\(aged.status) \(aged.body)")
                if next == first { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(next != first, "the aged token rotated")
            let ended = try await eventually { try await current(first).status.code == 421 }
            #expect(ended, "the replaced secret is refused once the overlap (1 s) ends")
            let still = try await current(next)
            #expect(still.status == .ok && still.headers[Self.header] == next, "young again: handed back as it is: \(still.headers)")
        }
    }

    @Test("a cnp_ token sent as ckWebAuthToken and a signed-out request get no token back: only web auth tokens rotate")
    func onlyWebAuthTokensRotate() async throws {
        let harness = try await GatewayHarness.make()
        let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: Self.configuration(age: .zero, overlap: .seconds(600)), live: true) { client in
            let canopy = try await client.webServices("private/users/current", apiToken: apiToken, webAuthToken: harness.aliceToken, method: .get)
            #expect(canopy.status == .ok && canopy.headers[Self.header] == nil, "\(canopy.headers)")
            let signedOut = try await client.webServices("public/records/query", #"{"query": {"recordType": "Note"}}"#, apiToken: apiToken, webAuthToken: "null")
            #expect(signedOut.status == .ok && signedOut.headers[Self.header] == nil, "\(signedOut.status) \(signedOut.headers)")
            #expect(try await client.webServices("private/users/current", apiToken: apiToken, webAuthToken: harness.aliceToken, method: .get).status == .ok,
                    "the cnp_ token was not rotated")
        }
    }
}
