@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HummingbirdTesting
import Testing

/// Canopy's own tokens can be listed and revoked (docs/API.md §10); a revoked
/// token is refused within 5 s everywhere, an open WebSocket included.
@Suite("Token revocation")
struct TokenRevocationTests {
    @Test("a revoked token is refused over HTTP within 5 s; the list shows it revoked and when it was last used")
    func revokedOverHTTP() async throws {
        let harness = try await GatewayHarness.make()
        let admin = UserAdmin(logger: TestDatabase.logger)
        try await harness.test { client in
            #expect(try await client.call("me", "{ me { name } }", token: harness.aliceToken).code == nil)
            // The use is recorded off the request's path: wait for it (on a
            // loaded machine it may come after a revocation sent at once,
            // and a revoked token's use is not recorded).
            let recorded = try await eventually(timeout: .seconds(30)) {
                let (_, tokens) = try await TestDatabase.withConnection(harness.endpoint) { connection in
                    try await admin.tokens(of: "alice", connection: connection)
                }
                return tokens.first?.lastUsed != nil
            }
            #expect(recorded, "the use was recorded")
            let prefix = String(harness.aliceToken.prefix(12))   // cnp_ and 8 hex digits
            let (user, token) = try await TestDatabase.withConnection(harness.endpoint) { connection in
                try await admin.revoke(prefix: prefix, connection: connection)
            }
            let revoked = ContinuousClock.now
            #expect(user.name == "alice" && token.revoked != nil)
            // Within 5 s: a request sent 5 s after the revocation is refused,
            // however long a loaded machine takes to answer it (timing the
            // answers instead failed once when one took seconds).
            let late = try await client.answerFiveSeconds(after: revoked, token: harness.aliceToken)
            #expect(late.code == "NOT_AUTHENTICATED", "a request sent 5 s after the revocation: \(late.body)")
            #expect(late.message.contains("unknown or revoked"), "\(late.body)")
            #expect(try await client.call("me", "{ me { name } }", token: harness.bobToken).code == nil, "bob's token is untouched")
        }
        let (_, tokens) = try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await admin.tokens(of: "alice", connection: connection)
        }
        #expect(tokens.count == 1)
        #expect(tokens.first?.prefix == String(harness.aliceToken.prefix(20)))
        #expect(tokens.first?.revoked != nil)
        #expect(tokens.first?.lastUsed != nil, "the use before the revocation was recorded")
    }

    @Test("revoke takes a prefix of at least 6 hex digits matching exactly one live token")
    func prefixes() async throws {
        let harness = try await GatewayHarness.make()
        let admin = UserAdmin(logger: TestDatabase.logger)
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            for (given, says) in [("cnp_12", "is not a token prefix"), ("cnp_zzzzzzzz", "is not a token prefix"), ("cnp_ffffffffffffffff", "no live token starts with")] {
                do {
                    _ = try await admin.revoke(prefix: given, connection: connection)
                    Issue.record("\(given) revoked something")
                } catch let error as StoreError {
                    #expect(error.message.contains(says), "\(error.message)")
                }
            }
            // A whole token works; revoking it twice does not.
            _ = try await admin.revoke(prefix: harness.bobToken, connection: connection)
            await #expect(throws: StoreError.self) { try await admin.revoke(prefix: harness.bobToken, connection: connection) }
        }
    }

    @Test("canopy users tokens and canopy users revoke, as an operator runs them", .enabled(if: CanopyBinary.exists, "build the canopy executable first"))
    func commandLine() async throws {
        let harness = try await GatewayHarness.make()
        let url = harness.endpoint.url
        let listed = try CanopyBinary.run(["users", "tokens", "alice", "--json", "--database-url", url])
        #expect(listed.succeeded, "\(listed.output)")
        let rows = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]] ?? []
        #expect(rows.count == 1 && rows.first?["prefix"] as? String == String(harness.aliceToken.prefix(20)), "\(listed.output)")
        #expect(rows.first?["revoked"] is NSNull)
        #expect(!listed.output.contains(harness.aliceToken), "never the secret")

        let revoked = try CanopyBinary.run(["users", "revoke", String(harness.aliceToken.prefix(12)), "--database-url", url])
        #expect(revoked.succeeded && revoked.output.contains("revoked \(harness.aliceToken.prefix(20)) of user alice"), "\(revoked.output)")
        let again = try CanopyBinary.run(["users", "revoke", String(harness.aliceToken.prefix(12)), "--database-url", url])
        #expect(!again.succeeded && again.output.contains("no live token starts with"), "\(again.output)")
        let words = try CanopyBinary.run(["users", "tokens", "alice", "--database-url", url])
        #expect(words.output.contains("revoked"), "\(words.output)")
    }
}
