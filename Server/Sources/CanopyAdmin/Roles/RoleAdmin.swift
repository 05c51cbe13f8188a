import CanopyRequestStore
import Logging
import PostgresNIO

/// Custom security roles of the public database (docs/API.md §15) for
/// `canopy roles`: who holds each role a schema file's `CREATE ROLE`
/// declared. The gateway cannot read or change these; a change takes
/// effect at the caller's next request and expires public change tokens
/// (sql/triggers/public_access.sql).
public struct RoleAdmin: Sendable {
    /// A role and the users given it.
    public struct Role: Sendable, Equatable {
        public var name: String
        public var members: [UserSummary]
    }

    public let logger: Logger
    let users: UserAdmin

    public init(logger: Logger) {
        self.logger = logger
        users = UserAdmin(logger: logger)
    }

    /// Gives `user` (a name or userRecordName) the role; true when they did not hold it.
    public func add(role: String, user: String, connection: PostgresConnection) async throws -> (UserSummary, Bool) {
        try await connection.inTransaction(logger: logger) { connection in
            try await requireRole(role, connection: connection)
            let member = try await users.find(user, connection: connection)
            let rows = try await connection.query(
                "INSERT INTO canopy.role_members (role_name, user_id) VALUES (\(role), \(member.id)) ON CONFLICT DO NOTHING RETURNING 1",
                logger: logger
            )
            var added = false
            for try await _ in rows.decode(Int.self) { added = true }
            return (member, added)
        }
    }

    /// Takes the role from `user`; true when they held it.
    public func remove(role: String, user: String, connection: PostgresConnection) async throws -> (UserSummary, Bool) {
        try await connection.inTransaction(logger: logger) { connection in
            try await requireRole(role, connection: connection)
            let member = try await users.find(user, connection: connection)
            let rows = try await connection.query(
                "DELETE FROM canopy.role_members WHERE role_name = \(role) AND user_id = \(member.id) RETURNING 1",
                logger: logger
            )
            var removed = false
            for try await _ in rows.decode(Int.self) { removed = true }
            return (member, removed)
        }
    }

    /// Every declared role with its members, by name.
    public func list(connection: PostgresConnection) async throws -> [Role] {
        let rows = try await connection.query("""
            SELECT r.name, u.id, u.record_name, u.name, u.email, u.phone
              FROM canopy.security_roles r
              LEFT JOIN canopy.role_members m ON m.role_name = r.name
              LEFT JOIN canopy.users u ON u.id = m.user_id
             ORDER BY r.name, u.name
            """, logger: logger)
        var roles: [Role] = []
        for try await (role, id, recordName, name, email, phone) in rows.decode((String, Int64?, String?, String?, String?, String?).self) {
            if roles.last?.name != role { roles.append(Role(name: role, members: [])) }
            if let id, let recordName, let name {
                roles[roles.count - 1].members.append(UserSummary(id: id, userRecordName: recordName, name: name, email: email, phone: phone))
            }
        }
        return roles
    }

    private func requireRole(_ role: String, connection: PostgresConnection) async throws {
        let rows = try await connection.query("SELECT name FROM canopy.security_roles ORDER BY name", logger: logger)
        var known: [String] = []
        for try await name in rows.decode(String.self) { known.append(name) }
        guard known.contains(role) else {
            let builtIn = ["_world", "_icloud", "_creator"].contains(role)
                ? "\(role) is built in: its members are decided by who asks, not assigned"
                : "no role \(role): declare it with CREATE ROLE \(role); in the schema file and run canopy schema apply"
            throw StoreError(.notFound, builtIn + (known.isEmpty ? " (no roles are declared yet)" : " (declared: \(known.joined(separator: ", ")))"))
        }
    }
}
