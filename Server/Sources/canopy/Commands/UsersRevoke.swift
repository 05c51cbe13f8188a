import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy users revoke PREFIX`: revokes one bearer token. Every gateway
/// refuses it within 5 s, open WebSocket subscriptions included.
struct UsersRevoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a bearer token by its prefix (as canopy users tokens shows it).",
        discussion: """
            PREFIX is cnp_ and at least 6 of the 16 hex digits after it (the cnp_ may be left out, and a \
            whole token works too); it must match exactly one live token. Gateways refuse the token within \
            5 seconds, and close WebSocket connections that authenticated with it.
            """
    )

    @Argument(help: "The token's prefix, e.g. cnp_3f2a9c1b.")
    var prefix: String

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let prefix = self.prefix
        let (user, token) = try await withUserAdmin(database) { users, connection in
            try await users.revoke(prefix: prefix, connection: connection)
        }
        print("revoked \(token.prefix) of user \(user.name) (\(user.userRecordName))")
    }
}
