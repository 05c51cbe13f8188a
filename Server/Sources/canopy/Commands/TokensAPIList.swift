import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy tokens api list`.
struct TokensAPIList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the API tokens (their prefixes, never the secrets), revoked ones too."
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let tokens = try await withContainerTokenAdmin(database) { tokens, connection in
            try await tokens.list(connection: connection)
        }
        if tokens.isEmpty {
            print("no API tokens: canopy tokens api add --container ID makes one")
            return
        }
        for token in tokens {
            let state = token.revoked.map { "revoked \($0.formatted(.iso8601))" } ?? "live"
            let callback = token.signInCallback.map { "  sign-in callback \($0)" } ?? ""
            print("\(token.prefix)  \(token.container)  \(token.name)  made \(token.created.formatted(.iso8601))  \(state)\(callback)")
        }
    }
}
