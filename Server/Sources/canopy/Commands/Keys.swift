import ArgumentParser

/// `canopy keys`: CloudKit Web Services' server-to-server keys.
struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage CloudKit Web Services server-to-server keys.",
        discussion: """
            A server process signs its requests with a key's private half (X-Apple-CloudKit-Request-KeyID, \
            -ISO8601Date, -SignatureV1) and acts as the key's user, in the public database unless the key \
            was given more (docs/WEB_SERVICES.md, "Server-to-server keys").
            """,
        subcommands: [KeysAdd.self, KeysList.self, KeysRevoke.self]
    )
}
