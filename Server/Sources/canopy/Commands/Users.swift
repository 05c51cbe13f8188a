import ArgumentParser

/// `canopy users`: accounts and their bearer tokens.
struct Users: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create users, issue, list and revoke bearer tokens.",
        discussion: "Tokens are printed once and stored only as SHA-256 hashes; keep them secret.",
        subcommands: [UsersAdd.self, UsersToken.self, UsersTokens.self, UsersRevoke.self]
    )
}
