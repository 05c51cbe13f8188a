import ArgumentParser
import CanopyAdmin

/// `canopy tokens api revoke PREFIX`.
struct TokensAPIRevoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke an API token; requests carrying it are refused within seconds."
    )

    @Argument(help: "The token's prefix as list shows it (cka_ and at least 6 hex digits), or the whole token.")
    var prefix: String

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let prefix = self.prefix
        let token = try await withContainerTokenAdmin(database) { tokens, connection in
            try await tokens.revoke(prefix: prefix, connection: connection)
        }
        print("revoked \(token.prefix) (\(token.container), \(token.name))")
    }
}
