@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// migrations/0041: a share's URL token has a row of its own in
/// canopy.share_tokens, written and removed by the share's trigger, which
/// is how a share is found by its URL and what keeps a token unique
/// across owners now that shares' own key on it holds the owner
/// (DECISIONS 159).
@Suite("Shares found by their URL token")
struct ShareTokensTests {
    @Test("a share's token row comes and goes with it; a token is unique across owners; accepting by URL finds the share")
    func tokensFollowShares() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let (bob, _) = try await addUser("bob", on: endpoint)
        let (carol, _) = try await addUser("carol", on: endpoint)
        let answers = try await TestDatabase.withConnection(endpoint) { connection in
            func run(_ sql: String) async throws -> [String?] {
                try await connection.texts(PostgresQuery(unsafeSQL: sql))
            }
            /// Each share's token row, as owner:share-title.
            let tokens = """
                SELECT coalesce(string_agg(CASE t.owner_id WHEN \(alice.id) THEN 'alice' WHEN \(bob.id) THEN 'bob' ELSE '?' END
                                           || ':' || coalesce(s.title, '-'), ' ' ORDER BY s.title), '')
                  FROM canopy.share_tokens t LEFT JOIN canopy.shares s ON s.id = t.share_id AND s.owner_id = t.owner_id AND s.url_token = t.url_token
                """
            for (user, zone) in [(alice, "Trips"), (alice, "Notes"), (bob, "Recipes")] {
                _ = try await run("INSERT INTO canopy.zones (owner_id, name) VALUES (\(user.id), '\(zone)')")
                _ = try await run("""
                    INSERT INTO canopy.shares (zone_id, title, public_permission)
                    SELECT id, '\(zone)', 'READ_ONLY' FROM canopy.zones WHERE owner_id = \(user.id) AND name = '\(zone)'
                    """)
            }
            var answers = try await run(tokens)
            // bob's share given alice's Trips token: refused by share_tokens' key.
            do {
                _ = try await run("""
                    UPDATE canopy.shares SET url_token = (SELECT url_token FROM canopy.shares WHERE title = 'Trips') WHERE title = 'Recipes'
                    """)
                answers.append("allowed")
            } catch {
                answers.append(PostgresErrors.sqlState(of: error))
            }
            // carol accepts Recipes by its URL.
            _ = try await run("SELECT set_config('canopy.user_id', '\(carol.id)', false)")
            answers += try await run("""
                SELECT (canopy.accept_share((SELECT url_token FROM canopy.shares WHERE title = 'Recipes'))
                        = (SELECT id FROM canopy.shares WHERE title = 'Recipes'))::text
                """)
            _ = try await run("SELECT set_config('canopy.user_id', '', false)")
            _ = try await run("DELETE FROM canopy.shares WHERE title = 'Notes'")
            _ = try await run("DELETE FROM canopy.zones WHERE owner_id = \(bob.id) AND name = 'Recipes'")
            answers += try await run(tokens)
            return answers
        }
        #expect(answers == ["alice:Notes bob:Recipes alice:Trips", "23505", "true", "alice:Trips"])
    }
}
