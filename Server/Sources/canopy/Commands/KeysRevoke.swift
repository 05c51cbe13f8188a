import ArgumentParser
import CanopyAdmin

/// `canopy keys revoke KEYID`.
struct KeysRevoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a server-to-server key; its requests are refused within seconds."
    )

    @Argument(help: "The key ID, or at least its first 8 hex digits.")
    var keyID: String

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let prefix = keyID
        let key = try await withServerKeyAdmin(database) { keys, connection in
            try await keys.revoke(prefix: prefix, connection: connection)
        }
        print("revoked \(key.keyID) (\(key.container), as \(key.user))")
    }
}
