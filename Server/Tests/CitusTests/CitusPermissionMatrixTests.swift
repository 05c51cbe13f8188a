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

/// The permission matrix against distributed tables (DECISIONS 161): the
/// fixture's rows written on the coordinator, then every table placed on
/// the workers, and each case run as the gateway acting by
/// `canopy.act_as`. Every case must answer as on one PostgreSQL: the
/// policies run on the shards, their probes on the rows' nodes, and the
/// writes' triggers on the rows' shards (DECISIONS 164-166;
/// docs/plans/ISSUE_67_SCHEMA_MAP.md §8 lists what it took).
@Suite("Citus: the permission matrix on distributed tables", .serialized)
struct CitusDistributedPermissionMatrixTests {
    static let fixture = FixtureBox(onCitus: true, distributed: true)

    @Test("every read and write of the permission matrix answers on distributed tables as on one PostgreSQL")
    func everyCaseAnswers() async throws {
        let fixture = try await Self.fixture.get()
        var mismatches: [String] = []
        for testCase in permissionCases {
            if let mismatch = await testCase.mismatch(in: fixture) { mismatches.append(mismatch) }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(permissionCases.count): \(mismatches.joined(separator: "\n"))")
        #expect(permissionCases.filter(\.isRead).count > 50 && permissionCases.filter { !$0.isRead }.count > 100)
    }

    /// What the gateway's per-zone reads will send once they bind the
    /// owner (docs/plans/ISSUE_67_SCHEMA_MAP.md §7 step 2): one shard's
    /// task, the policy's probe run on that shard's node.
    @Test("a participant's read of one owner's zone, naming the owner, is one task with the policy's probe in it")
    func oneTask() async throws {
        let fixture = try await Self.fixture.get()
        let (alice, reader, zone) = (fixture.ids["alice"]!, fixture.ids["reader"]!, fixture.ids["zone:Log"]!)
        let (plan, rows) = try await TestDatabase.withConnection(fixture.gateway) { connection in
            try await connection.asUser(reader, actAs: true) { connection in
                let read = "SELECT record_name FROM canopy.records WHERE owner_id = \(alice) AND zone_id = \(zone) ORDER BY 1"
                return (
                    try await connection.texts(PostgresQuery(unsafeSQL: "EXPLAIN (VERBOSE) " + read)).compactMap { $0 },
                    try await connection.texts(PostgresQuery(unsafeSQL: read)).compactMap { $0 }
                )
            }
        }
        #expect(rows == ["log1"])
        #expect(plan.contains { $0.contains("Task Count: 1") }, "\(plan.joined(separator: "\n"))")
        #expect(plan.contains { $0.contains("may_reach_record") }, "\(plan.joined(separator: "\n"))")
    }
}
