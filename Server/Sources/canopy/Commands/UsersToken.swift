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

    @Flag(name: .customLong("web-auth"), help: """
        Issue the token in the shape of a CloudKit web auth token (128 letters and digits), for \
        ?ckWebAuthToken= on Web Services requests. It is the same kind of token: revoke it by \
        the cnp_ prefix that 'canopy users tokens' lists.
        """)
    var webAuth = false

    @Flag(help: "Print {\"userRecordName\": ..., \"token\": ...} alone on stdout.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (name, form) = (self.name, webAuth ? BearerToken.Form.webAuth : .canopy)
        let (user, token) = try await withUserAdmin(database) { users, connection in
            try await users.token(for: name, form: form, connection: connection)
        }
        printToken(user: user, token: token, json: json)
    }
}
