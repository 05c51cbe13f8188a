@testable import CanopyGatewayTestSupport
import CanopyTestSupport
import PostgresNIO
import Testing

/// The permission matrix (PermissionMatrixTests: every identity against
/// every table and verb) on a Citus coordinator, whose policies are Citus's
/// expansion (DECISIONS 158): the probe functions of
/// sql/functions/policy_probes.sql must answer every case as the inline
/// probes do on one PostgreSQL. The tables are still on the coordinator
/// (issue 67, step 1 distributes them); the same cases run again then.
@Suite("Citus: the permission matrix", .serialized)
struct CitusPermissionMatrixTests {
    static let fixture = FixtureBox(onCitus: true)

    @Test("every case of the permission matrix, as on one PostgreSQL")
    func everyCase() async throws {
        let fixture = try await Self.fixture.get()
        var mismatches: [String] = []
        for testCase in permissionCases {
            if let mismatch = await testCase.mismatch(in: fixture) { mismatches.append(mismatch) }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(permissionCases.count): \(mismatches.joined(separator: "\n"))")
        #expect(permissionCases.count > 100)
    }

    /// The probes remember answers for the transaction; a change to
    /// memberships in that transaction starts a new generation, so a read
    /// after it is answered afresh (sql/triggers/memberships.sql).
    @Test("in one transaction a stranger reads nothing, accepts both public links, and then reads the shared records")
    func answersFollowMembershipsInOneTransaction() async throws {
        let fixture = try await Self.fixture.get()
        let tokens = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            try await connection.texts("SELECT url_token FROM canopy.shares ORDER BY id").compactMap { $0 }
        }
        #expect(tokens.count == 2)
        let counts = try await TestDatabase.withConnection(fixture.gateway) { connection in
            try await connection.asUser(fixture.ids["stranger"]!) { connection in
                let read = "SELECT count(*)::text FROM canopy.records"
                var counts = try await connection.texts(PostgresQuery(unsafeSQL: read))
                for token in tokens {
                    _ = try await connection.texts("SELECT canopy.accept_share(\(token))::text")
                    counts += try await connection.texts(PostgresQuery(unsafeSQL: read))
                }
                return counts.compactMap { $0 }
            }
        }
        #expect(counts == ["0", "3", "4"], "\(counts)")
    }
}
