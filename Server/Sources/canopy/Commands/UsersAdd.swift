import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy users add NAME`: a new user and a first token.
struct UsersAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Create a user (with its _defaultZone) and print a new bearer token."
    )

    @Argument(help: "The user's handle: letters, digits and _.@-, e.g. alice.")
    var name: String

    @Option(help: "The user's email; share invitations by email find the user by it.")
    var email: String?

    @Option(help: "The user's phone number, digits with an optional leading +.")
    var phone: String?

    @Flag(help: "Print {\"userRecordName\": ..., \"token\": ...} alone on stdout.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (name, email, phone) = (self.name, self.email, self.phone)
        let (user, token) = try await withUserAdmin(database) { users, connection in
            try await users.add(name: name, email: email, phone: phone, connection: connection)
        }
        printToken(user: user, token: token, json: json)
    }
}

/// Prints a freshly issued token: JSON alone on stdout, or words for people.
func printToken(user: UserSummary, token: BearerToken, json: Bool) {
    if json {
        let object = ["userRecordName": user.userRecordName, "token": token.string, "prefix": token.publicPrefix]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        print(String(decoding: data, as: UTF8.self))
    } else {
        print("user \(user.name) (\(user.userRecordName))")
        print("token \(token.string)")
        if token.form == .webAuth { print("prefix \(token.publicPrefix) (what 'canopy users tokens' lists and 'canopy users revoke' takes)") }
        print("This token is shown once; Canopy keeps only its hash.")
    }
}
