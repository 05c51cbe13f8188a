import ArgumentParser

/// `canopy shares`: what happened to users' shares.
struct Shares: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect shares: their activity logs.",
        discussion: """
            Every share keeps an append-only log written by the database: invitations, acceptances, \
            permission changes, removals, departures, access requests and their decisions, the public \
            permission, and the share's creation and deletion (docs/SHARING.md, "Activity").
            """,
        subcommands: [SharesActivity.self]
    )
}
