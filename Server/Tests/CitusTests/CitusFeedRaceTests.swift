@testable import CanopyGatewayTestSupport
import CanopyTestSupport
import Testing

/// The database feed's race (``DatabaseFeedRace``) through the gateway on
/// distributed tables (issue 67's "feeds with the eight-writer race"; the
/// owner's clock, zones and records on one worker, DECISIONS 173).
@Suite("Citus: the database feed under racing writers", .serialized)
struct CitusFeedRaceTests {
    @Test("six writers over 24 zones committing out of order: a reader syncing by databaseChanges, then zoneChanges, gets every committed record")
    func followTheDatabaseFeed() async throws {
        let harness = try await GatewayHarness.makeOnCitus(distributed: true)
        let outcome = try await harness.test { client in try await DatabaseFeedRace.run(harness, client: client) }
        DatabaseFeedRace.check(outcome)
    }
}
