import ArgumentParser

/// `canopy migrate`: the schema's migrations.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply, inspect and create schema migrations.",
        discussion: """
            Migrations are migrations/NNNN_name.sql files, applied in order, each in its own \
            transaction under an advisory lock, and recorded with a checksum in \
            canopy.schema_migrations. An applied file must never be edited: add a new one.
            """,
        subcommands: [MigrateUp.self, MigrateStatus.self, MigrateVerify.self, MigrateNew.self]
    )
}
