import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy users tokens NAME`: a user's bearer tokens, by prefix, with when
/// each was created and last used, and whether it was revoked.
struct UsersTokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "List a user's bearer tokens: prefix, created, last used, revoked.",
        discussion: "Secrets are never shown (Canopy keeps only their hashes). Revoke one with: canopy users revoke PREFIX"
    )

    @Argument(help: "The user's name or userRecordName.")
    var name: String

    @Flag(help: "Print a JSON array of {prefix, created, lastUsed, revoked} (ISO 8601, null when never).")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let name = self.name
        let (user, tokens) = try await withUserAdmin(database) { users, connection in
            try await users.tokens(of: name, connection: connection)
        }
        let format = ISO8601DateFormatter()
        if json {
            let rows: [[String: Any]] = tokens.map { token in
                [
                    "prefix": token.prefix, "created": format.string(from: token.created),
                    "lastUsed": token.lastUsed.map { format.string(from: $0) } ?? NSNull(),
                    "revoked": token.revoked.map { format.string(from: $0) } ?? NSNull(),
                ]
            }
            let data = try JSONSerialization.data(withJSONObject: rows, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("user \(user.name) (\(user.userRecordName)): \(tokens.count) token\(tokens.count == 1 ? "" : "s")")
        for token in tokens {
            let used = token.lastUsed.map { "last used \(format.string(from: $0))" } ?? "never used"
            let state = token.revoked.map { "revoked \(format.string(from: $0))" } ?? "live"
            print("\(token.prefix)  created \(format.string(from: token.created))  \(used)  \(state)")
        }
    }
}
