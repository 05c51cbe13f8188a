import ArgumentParser

/// `canopy tokens`: credentials that are not a user's (CloudKit Web Services').
struct Tokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the credentials of CloudKit Web Services clients.",
        subcommands: [TokensAPI.self]
    )
}
