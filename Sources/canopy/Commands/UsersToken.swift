import ArgumentParser
import CanopyAdmin
import CanopyRequestStore

/// `canopy users token NAME`: another token for an existing user.
struct UsersToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Issue another bearer token for a user (found by name or userRecordName)."
    )

    @Argument(help: "The user's name or userRecordName.")
    var name: String

    @Flag(help: "Print {\"userRecordName\": ..., \"token\": ...} alone on stdout.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let name = self.name
        let (user, token) = try await withUserAdmin(database) { users, connection in
            try await users.token(for: name, connection: connection)
        }
        printToken(user: user, token: token, json: json)
    }
}
