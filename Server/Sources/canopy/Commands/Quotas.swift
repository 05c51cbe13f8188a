import ArgumentParser

/// `canopy quotas`: storage quotas (issue 53).
struct Quotas: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show and set storage quotas: the default, and each user's own.",
        discussion: """
            A user's stored bytes are their records' fields (as JSON text) and the assets those records hold, in zones \
            they own (a shared zone's records are its owner's) and public records they created; uploads not yet attached \
            count too until they expire. The database keeps them in the writing transaction and refuses a write or an \
            upload past the quota with QUOTA_EXCEEDED (docs/QUOTAS.md).
            """,
        subcommands: [QuotasShow.self, QuotasSet.self]
    )
}
