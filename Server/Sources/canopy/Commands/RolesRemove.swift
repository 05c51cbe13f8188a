import ArgumentParser
import CanopyAdmin

/// `canopy roles remove ROLE USER`.
struct RolesRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Take a custom security role from a user."
    )

    @OptionGroup var assignment: RoleAssignmentArguments

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (role, user) = (assignment.role, assignment.user)
        let (member, removed) = try await withRoleAdmin(database) { roles, connection in
            try await roles.remove(role: role, user: user, connection: connection)
        }
        print(removed ? "\(member.name) (\(member.userRecordName)) no longer holds \(role)" : "\(member.name) did not hold \(role); nothing changed")
    }
}
