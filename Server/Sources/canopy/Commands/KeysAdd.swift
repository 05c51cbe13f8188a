import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy keys add --public-key FILE --container ID --as USER`.
struct KeysAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Register a server-to-server public key and print its key ID."
    )

    @Option(name: .customLong("public-key"), help: ArgumentHelp(
        "An ECDSA P-256 public key in PEM: openssl ecparam -name prime256v1 -genkey -noout -out key.pem, then openssl ec -in key.pem -pubout -out public.pem.",
        valueName: "file"))
    var publicKey: String

    @Option(help: "The container whose requests the key signs (iCloud.com.example.app).")
    var container: String

    @Option(name: .customLong("as"), help: "The user the key's requests act as (name or userRecordName): CloudKit's developer who made the key.")
    var user: String

    @Option(name: .customLong("database"), help: ArgumentHelp(
        "A database the key may reach: public (the default, and all CloudKit allows), private or shared (the user's own: Canopy's addition). Repeat for more.",
        valueName: "name"))
    var databases: [String] = []

    @Option(help: "What the key is for; shown by list.")
    var name = "server key"

    @Flag(help: "Print {\"keyID\": ..., \"container\": ..., \"databases\": [...]} alone on stdout.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let pem: String
        do {
            pem = try String(contentsOfFile: publicKey, encoding: .utf8)
        } catch {
            throw fail(ValidationError("cannot read --public-key \(publicKey): \(error.localizedDescription)"))
        }
        let (container, user, databases, name) = (self.container, self.user, self.databases, self.name)
        let key = try await withServerKeyAdmin(database) { keys, connection in
            try await keys.add(publicKey: try ServerKeyAdmin.publicKey(pem: pem), container: container, user: user,
                               databases: databases, name: name, connection: connection)
        }
        if json {
            let object: [String: Any] = ["keyID": key.keyID, "container": key.container, "databases": key.databases, "user": key.user]
            print(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self))
        } else {
            print("key \(key.keyID)")
            print("signs for \(key.container) as \(key.user), in the \(key.databases.joined(separator: " and ")) database\(key.databases.count > 1 ? "s" : "")")
            print("Send it as X-Apple-CloudKit-Request-KeyID.")
        }
    }
}
