@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// The policies a Citus coordinator runs are PolicyExpansion's (DECISIONS
/// 158): `canopy migrate up` expanded them, and no
/// `(SELECT canopy.f(…))` wrapper and no subquery is left in any (the
/// membership probes are functions there, sql/functions/policy_probes.sql);
/// a database migrated on one PostgreSQL keeps every wrapper.
@Suite("Citus: policies without subqueries", .serialized)
struct CitusPolicyTests {
    static let stored = """
        SELECT tablename || ' ' || policyname || ' ' ||
               CASE WHEN coalesce(qual, '') || coalesce(with_check, '') ~ '\\(\\s*SELECT canopy\\.' THEN 'wrapped'
                    WHEN coalesce(qual, '') || coalesce(with_check, '') LIKE '%SELECT%' THEN 'subquery'
                    ELSE 'plain' END
          FROM pg_policies WHERE schemaname = 'canopy' AND 'canopy_gateway' = ANY (roles) ORDER BY 1
        """

    @Test("migrated on a Citus coordinator, no policy holds a wrapper or a subquery; on one PostgreSQL the same files keep them")
    func expandedOnCitus() async throws {
        let citus = try await TestDatabase.shared.migratedCitusDatabase()
        let onCitus = try await TestDatabase.withConnection(citus) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: Self.stored)).compactMap { $0 }
        }
        #expect(!onCitus.isEmpty)
        #expect(onCitus.filter { $0.hasSuffix(" wrapped") }.isEmpty, "\(onCitus)")
        #expect(onCitus.filter { $0.hasSuffix(" subquery") }.isEmpty, "\(onCitus.filter { $0.hasSuffix(" subquery") })")
        #expect(onCitus.contains("records records_select plain"), "\(onCitus)")

        let single = try await TestDatabase.shared.migratedDatabase()
        let onPostgres = try await TestDatabase.withConnection(single) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: Self.stored)).compactMap { $0 }
        }
        #expect(onPostgres.filter { $0.hasSuffix(" wrapped") }.count > 20, "\(onPostgres)")
    }
}
