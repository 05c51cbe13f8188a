import CanopyRequestStore
import Logging
import PostgresNIO

/// Where migrating a Citus coordinator differs from migrating one
/// PostgreSQL (issue 67: "one switch read by the migrator, not a second
/// copy of the SQL"; docs/CITUS.md). Today: the owner role logs in.
/// Step 1 of the issue adds distributing the tables here.
enum CitusSwitch {
    /// On Citus, `canopy_owner` must be able to log in: the files create
    /// their objects as it (`SET LOCAL ROLE canopy_owner`), and Citus
    /// carries each such statement to the workers over connections of the
    /// same role (DECISIONS 154). Only between the nodes: the development
    /// cluster's nodes trust local sockets alone, and a deployment's
    /// pg_hba.conf admits the role from the nodes' addresses only
    /// (docs/DEPLOYMENT.md). Run outside the file's transaction, so the
    /// workers see it committed before a file's first statement reaches
    /// them; the baseline resets the role to NOLOGIN (as it must on one
    /// PostgreSQL), so it runs before every file.
    static func letOwnerLogIn(_ connection: PostgresConnection, logger: Logger) async throws {
        try await registerRoles(connection, logger: logger)
        let rows = try await connection.query("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'canopy_owner'", logger: logger)
        var canLogIn = true
        for try await value in rows.decode(Bool.self) { canLogIn = value }
        if !canLogIn {
            try await connection.query("ALTER ROLE canopy_owner LOGIN", logger: logger)
        }
    }

    /// Citus records, per database, which roles it has made sure of on the
    /// workers. A role made by another database's migration is not
    /// recorded in this one, and Citus then re-creates it on the workers
    /// before the first object that depends on it, as the role running the
    /// statement (`canopy_owner`), which is refused (only a superuser may
    /// state a role's attributes). So, as the administrator and before any
    /// file, this database records both roles: a function in a schema of
    /// its own (`canopy_citus_roles`, holding nothing else) is handed to
    /// `canopy_owner` and granted to `canopy_gateway`, and Citus, carrying
    /// those statements to the workers, records the roles. (Making the
    /// schema theirs is not enough: Citus does not follow a schema's owner.)
    static func registerRoles(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query("""
            SELECT (SELECT count(*) FROM pg_roles WHERE rolname IN ('canopy_owner', 'canopy_gateway')) = 2
               AND (SELECT count(*) FROM pg_dist_object o JOIN pg_roles r ON r.oid = o.objid
                     WHERE o.classid = 'pg_authid'::regclass AND r.rolname IN ('canopy_owner', 'canopy_gateway')) < 2
            """, logger: logger)
        var needed = false
        for try await value in rows.decode(Bool.self) { needed = value }
        guard needed else { return }
        for statement in [
            "CREATE SCHEMA IF NOT EXISTS canopy_citus_roles",
            "REVOKE ALL ON SCHEMA canopy_citus_roles FROM PUBLIC",
            "CREATE OR REPLACE FUNCTION canopy_citus_roles.anchor() RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 1'",
            "REVOKE ALL ON FUNCTION canopy_citus_roles.anchor() FROM PUBLIC",
            "ALTER FUNCTION canopy_citus_roles.anchor() OWNER TO CURRENT_USER",
            "ALTER FUNCTION canopy_citus_roles.anchor() OWNER TO canopy_owner",
            "GRANT EXECUTE ON FUNCTION canopy_citus_roles.anchor() TO canopy_gateway",
        ] {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    /// On Citus, the roles' sessions record the SET LOCALs they are sent
    /// (`citus.propagate_set_commands = 'local'` by default for
    /// `canopy_gateway` and `canopy_owner`, on every node: Citus carries
    /// `ALTER ROLE … SET` to the workers and to nodes added later), so that
    /// a worker's own connection to another node, for a nested statement,
    /// begins with them too: the caller's `canopy.user_id` among them
    /// (DECISIONS 180). A worker receives them inside the coordinator's
    /// `BEGIN …` string; recording them needs Canopy's second Citus patch
    /// (scripts/citus/patches/0002-…), which records each by its own text.
    /// Once per cluster: nothing is altered when both roles have it.
    static func recordSetsOnWorkers(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query("""
            SELECT r.rolname FROM pg_roles r
             WHERE r.rolname IN ('canopy_gateway', 'canopy_owner')
               AND NOT EXISTS (SELECT 1 FROM pg_db_role_setting s
                                WHERE s.setrole = r.oid AND s.setdatabase = 0
                                  AND 'citus.propagate_set_commands=local' = ANY (s.setconfig))
             ORDER BY 1
            """, logger: logger)
        var roles: [String] = []
        for try await role in rows.decode(String.self) { roles.append(role) }
        for role in roles where role == "canopy_gateway" || role == "canopy_owner" {
            try await connection.query(PostgresQuery(unsafeSQL: "ALTER ROLE \(role) SET citus.propagate_set_commands = 'local'"), logger: logger)
        }
    }
}
