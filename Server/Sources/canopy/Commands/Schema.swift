import ArgumentParser

/// `canopy schema`: record-type schemas in CloudKit's schema language.
struct Schema: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check, apply and export record-type schemas (CloudKit's schema language, as cktool export-schema writes it).",
        discussion: """
            A schema declares record types, their fields' types and indexes (QUERYABLE, SORTABLE, \
            SEARCHABLE) and grants. apply records the types and builds the indexes without blocking \
            writers; export prints what the database holds, inferred types included. See \
            docs/RECORD_SCHEMAS.md.
            """,
        subcommands: [SchemaCheck.self, SchemaApply.self, SchemaExport.self, SchemaIndexes.self, SchemaTypeScript.self]
    )
}
