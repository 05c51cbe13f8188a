import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy tokens api add --container ID`.
struct TokensAPIAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Make an API token for a container and print it (shown once)."
    )

    @Option(help: "The container identifier, as in request paths (iCloud.com.example.app).")
    var container: String

    @Option(help: "What the token is for (the web app, the relay); shown by list.")
    var name = "api token"

    @Option(name: .customLong("sign-in-callback"), help: ArgumentHelp(
        "Where the sign-in page sends a person back, as ?ckWebAuthToken=… on this URL (CloudKit's \"Sign In Callback\"). Without it the page posts {ckWebAuthToken} to the window that opened it, if that window's origin is one of --cors-origin.",
        valueName: "url"))
    var signInCallback: String?

    @Flag(help: "Print {\"container\": ..., \"prefix\": ..., \"token\": ...} alone on stdout.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (container, name, callback) = (self.container, self.name, self.signInCallback)
        let (summary, token) = try await withContainerTokenAdmin(database) { tokens, connection in
            try await tokens.add(container: container, name: name, signInCallback: callback, connection: connection)
        }
        if json {
            let object = ["container": summary.container, "prefix": summary.prefix, "token": token.string]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print("API token for \(summary.container) (\(summary.name)):")
            print(token.string)
            print("Send it as ?ckAPIToken=… on every Web Services request; it is shown only now.")
        }
    }
}
