import ArgumentParser
import CanopyAdmin

/// `canopy tokens api revoke PREFIX`.
struct TokensAPIRevoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke an API token; requests carrying it are refused within seconds."
    )

    @Argument(help: "The token's prefix as list shows it (at least 6 of its first 16 hex digits; cka_ and 6 or more for a token issued before 0.49), or the whole token.")
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
