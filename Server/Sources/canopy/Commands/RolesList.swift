import ArgumentParser
import CanopyAdmin

/// `canopy roles list`.
struct RolesList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the custom security roles and who holds each."
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let roles = try await withRoleAdmin(database) { roles, connection in
            try await roles.list(connection: connection)
        }
        if roles.isEmpty {
            print("no custom roles: declare them with CREATE ROLE in the schema file (canopy schema apply)")
            return
        }
        for role in roles {
            let members = role.members.map { "\($0.name) (\($0.userRecordName))" }
            print("\(role.name): " + (members.isEmpty ? "nobody" : members.joined(separator: ", ")))
        }
    }
}
