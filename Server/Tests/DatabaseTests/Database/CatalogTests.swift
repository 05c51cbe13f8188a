@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO
import Testing

/// What must hold of the schema whatever the policies say: RLS forced on
/// every table, roles that cannot bypass it, definer functions that cannot
/// be hijacked, views that run as the caller.
@Suite("Catalog: the schema's security properties")
struct CatalogTests {
    static let database = DatabaseBox()

    @Test("every table in schema canopy has row-level security enabled and forced")
    func forcedEverywhere() async throws {
        let endpoint = try await Self.database.get()
        let offenders = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("""
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = 'canopy' AND c.relkind IN ('r', 'p') AND NOT (c.relrowsecurity AND c.relforcerowsecurity)
                """)
        }
        #expect(offenders.isEmpty, "tables without ENABLE + FORCE: \(offenders)")
        let tables = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("SELECT count(*)::text FROM pg_tables WHERE schemaname = 'canopy'")
        }
        // 36: owner_clocks (migrations/0047) is the newest.
        #expect(tables == ["36"], "a new table appeared: check it has RLS and a test in the matrix")
    }

    @Test("no canopy role is a superuser or bypasses RLS; the gateway owns nothing")
    func roles() async throws {
        let endpoint = try await Self.database.get()
        let (privileged, owned, gatewayLogs) = try await TestDatabase.withConnection(endpoint) { connection in
            (
                try await connection.texts("SELECT rolname FROM pg_roles WHERE rolname LIKE 'canopy%' AND rolname <> 'canopy_admin' AND (rolsuper OR rolbypassrls OR rolcreaterole OR rolcreatedb)"),
                try await connection.texts("""
                    SELECT c.relname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname = 'canopy_gateway'
                    UNION ALL SELECT p.proname FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner WHERE r.rolname = 'canopy_gateway'
                    UNION ALL SELECT n.nspname FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner WHERE r.rolname = 'canopy_gateway'
                    """),
                try await connection.texts("SELECT rolcanlogin::text || rolinherit::text FROM pg_roles WHERE rolname IN ('canopy_gateway', 'canopy_owner') ORDER BY rolname")
            )
        }
        #expect(privileged.isEmpty, "privileged roles: \(privileged)")
        #expect(owned.isEmpty, "objects owned by canopy_gateway: \(owned)")
        #expect(gatewayLogs == ["truefalse", "falsefalse"], "gateway logs in, owner does not")
    }

    @Test("every table and function in canopy belongs to canopy_owner")
    func ownership() async throws {
        let endpoint = try await Self.database.get()
        let foreign = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("""
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = 'canopy' AND c.relkind IN ('r', 'v', 'S') AND pg_get_userbyid(c.relowner) <> 'canopy_owner'
                UNION ALL
                SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                 WHERE n.nspname = 'canopy' AND pg_get_userbyid(p.proowner) <> 'canopy_owner'
                """)
        }
        #expect(foreign.isEmpty, "not owned by canopy_owner: \(foreign)")
    }

    @Test("every SECURITY DEFINER function pins search_path and is not executable by PUBLIC")
    func definerFunctions() async throws {
        let endpoint = try await Self.database.get()
        let (unpinned, publicExecutable, definers) = try await TestDatabase.withConnection(endpoint) { connection in
            (
                try await connection.texts("""
                    SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = 'canopy' AND p.prosecdef
                       AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')
                    """),
                try await connection.texts("""
                    SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = 'canopy'
                       AND (p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))
                    """),
                try await connection.texts("SELECT count(*)::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'canopy' AND p.prosecdef")
            )
        }
        #expect(unpinned.isEmpty, "definer functions without a pinned search_path: \(unpinned)")
        #expect(publicExecutable.isEmpty, "functions PUBLIC may execute: \(publicExecutable)")
        #expect(Int(definers.first!! )! > 5, "the helpers are definer functions")
    }

    @Test("every view in canopy is security_invoker")
    func views() async throws {
        let endpoint = try await Self.database.get()
        let offenders = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("""
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = 'canopy' AND c.relkind = 'v'
                   AND NOT coalesce(c.reloptions @> ARRAY['security_invoker=true'] OR c.reloptions @> ARRAY['security_invoker=on'], false)
                """)
        }
        #expect(offenders.isEmpty, "views that run as their owner: \(offenders)")
    }

    @Test("every table and column a person reads in psql has a comment")
    func comments() async throws {
        let endpoint = try await Self.database.get()
        let missing = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("""
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = 'canopy' AND c.relkind = 'r' AND obj_description(c.oid, 'pg_class') IS NULL
                UNION ALL
                SELECT c.relname || '.' || a.attname FROM pg_attribute a
                  JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = 'canopy' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
                   AND a.attname NOT IN ('id') AND c.relname <> 'schema_migrations'
                   AND col_description(c.oid, a.attnum) IS NULL
                """)
        }
        #expect(missing.isEmpty, "without COMMENT: \(missing)")
    }

    @Test("the gateway role cannot create objects or change roles")
    func gatewayCannotEscalate() async throws {
        let endpoint = try await Self.database.get()
        let gateway = endpoint.asUser("canopy_gateway", password: nil)
        for statement in [
            "CREATE TABLE canopy.evil (x int)",
            "CREATE FUNCTION canopy.evil() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            "ALTER TABLE canopy.records DISABLE ROW LEVEL SECURITY",
            "SET ROLE canopy_owner",
            "SELECT canopy.propagate_share(1, 1, 'x', NULL)",
        ] {
            await #expect(throws: (any Error).self, "\(statement)") {
                try await TestDatabase.withConnection(gateway) { connection in
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
                }
            }
        }
    }
}

/// One migrated database per suite, made on first use.
actor DatabaseBox {
    private var task: Task<DatabaseEndpoint, any Error>?

    func get() async throws -> DatabaseEndpoint {
        if let task { return try await task.value }
        let task = Task { try await TestDatabase.shared.migratedDatabase() }
        self.task = task
        return try await task.value
    }
}
