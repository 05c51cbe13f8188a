import ArgumentParser
import CanopyAdmin

/// `canopy roles add ROLE USER`.
struct RolesAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Give a user a custom security role."
    )

    @OptionGroup var assignment: RoleAssignmentArguments

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (role, user) = (assignment.role, assignment.user)
        let (member, added) = try await withRoleAdmin(database) { roles, connection in
            try await roles.add(role: role, user: user, connection: connection)
        }
        print(added ? "\(member.name) (\(member.userRecordName)) now holds \(role)" : "\(member.name) already holds \(role); nothing changed")
    }
}
