import ArgumentParser

/// `canopy secrets`: the server's own signing keys.
struct Secrets: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List and rotate the server's signing keys (cursors, change tokens, asset URLs, Web Push).",
        discussion: "Keys live in the database (canopy.server_secrets), never shown; docs/SECURITY.md, \"Rotating the server's secrets\".",
        subcommands: [SecretsList.self, SecretsRotate.self]
    )
}
