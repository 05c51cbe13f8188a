@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// The permission table of docs/API.md §1, cell by cell, as `canopy_gateway`
/// with each identity set the way the gateway sets it. Every case runs in a
/// transaction that is rolled back, so cases do not see each other's writes.
@Suite("Row-level security: the permission matrix", .serialized)
struct PermissionMatrixTests {
    static let fixture = FixtureBox()

    @Test(arguments: permissionCases)
    func permission(_ testCase: PermissionCase) async throws {
        let fixture = try await Self.fixture.get()
        if let mismatch = await testCase.mismatch(in: fixture) {
            Issue.record(Comment(rawValue: mismatch))
        }
    }

    @Test("the gateway role without an identity sees nothing but the public zone")
    func anonymous() async throws {
        let fixture = try await Self.fixture.get()
        let counts = try await TestDatabase.withConnection(fixture.gateway) { connection in
            try await connection.asUser(nil) { connection in
                try await connection.texts("""
                    SELECT concat_ws(',', (SELECT count(*) FROM canopy.records), (SELECT count(*) FROM canopy.zones),
                        (SELECT count(*) FROM canopy.shares), (SELECT count(*) FROM canopy.participants),
                        (SELECT count(id) FROM canopy.users), (SELECT count(*) FROM canopy.tombstones))
                    """)
            }
        }
        // The one zone is the public database's (migrations/0025), empty here.
        #expect(counts == ["0,1,0,0,0,0"])
    }

    @Test("nobody (a request without a token) against every table: no privilege, or no row but the public zone")
    func nobodyEveryTable() async throws {
        let fixture = try await Self.fixture.get()
        let tables = try await TestDatabase.withConnection(fixture.endpoint) { connection in
            try await connection.texts("SELECT tablename::text FROM pg_tables WHERE schemaname = 'canopy' ORDER BY 1")
        }.compactMap { $0 }
        // storage_usage and storage_quota_default (issue 53): no privilege at all, as every table below but three.
        #expect(tables.count == 36, "a new table: decide what nobody may read of it, here")
        var seen: [String: String] = [:]
        for table in tables {
            let result: Result<[String?], any Error> = await Result {
                try await TestDatabase.withConnection(fixture.gateway) { connection in
                    try await connection.asUser(nil) { connection in
                        try await connection.texts(PostgresQuery(unsafeSQL: "SELECT count(*)::text FROM canopy.\"\(table)\""))
                    }
                }
            }
            switch result {
            case .success(let rows): seen[table] = rows.first.flatMap { $0 } ?? "?"
            case .failure(let error):
                let state = PostgresErrors.sqlState(of: error)
                seen[table] = state == "42501" ? "denied" : "failed: \(PostgresErrors.message(of: error))"
            }
        }
        // What nobody may read on purpose: the public zone's row; the record
        // types' schema (field_types, which every caller reads, as CloudKit's
        // dashboard shows it: two fields here); the purge watermark (feed_state,
        // one row of cluster-wide state, no one's data).
        let allowed = ["zones": "1", "field_types": "2", "feed_state": "1"]
        let offenders = seen.filter { table, outcome in outcome != "denied" && outcome != (allowed[table] ?? "0") }
        #expect(offenders.isEmpty, "nobody reads: \(offenders.sorted { $0.key < $1.key })")
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
