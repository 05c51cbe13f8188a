import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy keys list`.
struct KeysList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the server-to-server keys, revoked ones too."
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let keys = try await withServerKeyAdmin(database) { keys, connection in
            try await keys.list(connection: connection)
        }
        if keys.isEmpty {
            print("no server-to-server keys: canopy keys add --public-key FILE --container ID --as USER registers one")
            return
        }
        for key in keys {
            let state = key.revoked.map { "revoked \($0.formatted(.iso8601))" } ?? "live"
            print("\(key.keyID)  \(key.container)  as \(key.user)  \(key.databases.joined(separator: ","))  \(key.name)  \(state)")
        }
    }
}
