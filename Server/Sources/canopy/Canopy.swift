import ArgumentParser

/// The `canopy` command: serve the gateway, migrate the schema, manage users,
/// and look at the data as a given user.
@main
struct Canopy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canopy",
        abstract: "CloudKit-style zones, records and sharing on PostgreSQL.",
        discussion: """
            Every command takes --database-url (or CANOPY_DATABASE_URL). With neither, it uses \
            an embedded PostgreSQL cluster in --data-dir (default ./.canopy), which it initialises \
            and starts itself.
            """,
        subcommands: [Serve.self, Migrate.self, Schema.self, Users.self, Roles.self, Tokens.self, Keys.self, Shares.self, Secrets.self, Quotas.self, Assets.self, Backup.self, Restore.self, Psql.self, Cluster.self]
    )
}
