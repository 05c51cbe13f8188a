import ArgumentParser
import CanopyAdmin
import CanopyPlanner
import CanopyRequestStore
import Foundation

/// `canopy schema apply FILE`: make the database's schema the file's.
struct SchemaApply: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Make the database's schema the file's: record the types, then build or drop indexes without blocking writers.",
        discussion: """
            Record types and fields missing from the file are dropped, as CloudKit's import does, \
            but never while records hold them. In production mode (--mode production or \
            CANOPY_MODE=production) the schema may only grow: a drop, a retype or a removed index \
            is refused, each named, and nothing is written. Indexes are built with CREATE INDEX \
            CONCURRENTLY; an index left invalid by an interrupted apply is rebuilt by the next one. \
            CREATE ROLE lines declare the public database's custom security roles (members are \
            assigned with canopy roles add); GRANT lines decide who reads, creates and writes each \
            type's public records, from the next request on.
            """
    )

    @Argument(help: ArgumentHelp("The schema file, or - for standard input.", valueName: "file"))
    var file: String

    @Flag(name: .customLong("dry-run"), help: "Print the changes and refusals; write nothing.")
    var dryRun = false

    @OptionGroup var mode: ModeOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    func run() async throws {
        let desired = try RecordTypesFile.read(file)
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.schema")
        let migrator = migrations.migrator(logger: logger)
        let mode = self.mode.mode
        let dryRun = self.dryRun
        let outcome: Outcome
        do {
            outcome = try await withAdminConnection(database, logger: logger) { connection, _ in
                try await migrator.up(connection: connection) { _ in }
                return try await RecordTypeCatalog.withApplyLock(connection: connection, logger: logger) {
                    let current = StoredRecordTypes.document(
                        fields: try await RecordTypeCatalog.fields(connection: connection, logger: logger),
                        grants: try await RecordTypeCatalog.grants(connection: connection, logger: logger),
                    roles: try await RecordTypeCatalog.roles(connection: connection, logger: logger)
                    )
                    let changes = RecordTypesChanges.between(current: current, desired: desired)
                    var refusals = changes.refusals(in: mode)
                    // Dropping or retyping what records still hold would strand their values.
                    for change in changes.changes {
                        switch change {
                        case .dropField(let type, let field) where !field.isSystemField,
                             .retype(let type, _, let field) where !field.isSystemField:
                            let holders = try await RecordTypeCatalog.holders(of: type, field: field.name, connection: connection, logger: logger)
                            if holders > 0 {
                                refusals.append("\(type).\(field.name) is held by \(holders) record\(holders == 1 ? "" : "s"): \(change) would strand their values")
                            }
                        default: break
                        }
                    }
                    // On distributed Citus tables, no new index of a list or
                    // searchable field (DECISIONS 187).
                    refusals += try await RecordTypeCatalog.refusalsOnDistributedTables(
                        RecordTypeIndex.indexes(for: desired).map(StoredRecordTypes.stored), connection: connection, logger: logger
                    )
                    for change in changes.changes { print(change) }
                    if !refusals.isEmpty || dryRun { return Outcome(changes: changes, refusals: refusals, report: nil) }

                    var upserts: [StoredField] = []
                    var removed: [(recordType: String, fieldName: String)] = []
                    var grants: [String: [StoredGrant]] = [:]
                    var roles: (added: [String], dropped: [String]) = ([], [])
                    for change in changes.changes {
                        switch change {
                        case .addField(let type, let field), .changeIndexes(let type, _, let field), .retype(let type, _, let field):
                            upserts.append(StoredRecordTypes.stored(field, of: type))
                        case .dropField(let type, let field):
                            removed.append((type, field.name))
                        case .setGrants(let type, let list):
                            grants[type] = StoredRecordTypes.stored(list, of: type)
                        case .addRole(let name):
                            roles.added.append(name)
                        case .dropRole(let name):
                            roles.dropped.append(name)
                        }
                    }
                    let indexes = RecordTypeIndex.indexes(for: desired).map(StoredRecordTypes.stored)
                    try await RecordTypeCatalog.write(
                        upserting: upserts, removing: removed, grants: grants, roles: roles, indexes: indexes, connection: connection, logger: logger
                    )
                    let report = try await RecordTypeCatalog.buildIndexes(indexes, connection: connection, logger: logger) { print($0) }
                    return Outcome(changes: changes, refusals: [], report: report)
                }
            }
        } catch {
            throw fail(error)
        }
        if !outcome.refusals.isEmpty {
            for refusal in outcome.refusals { RecordTypesFile.printError("refused: \(refusal)") }
            RecordTypesFile.printError("nothing was applied (\(mode.rawValue) mode)")
            throw ExitCode.failure
        }
        let count = outcome.changes.changes.count
        let summary = count == 0 ? "no changes" : "\(count) change\(count == 1 ? "" : "s")"
        guard let report = outcome.report else {
            print("dry run: \(summary); nothing written")
            return
        }
        print("applied \(summary) (\(mode.rawValue) mode); indexes: \(report.built.count) built, \(report.rebuilt.count) rebuilt, \(report.dropped.count) dropped, \(report.kept.count) kept")
    }

    struct Outcome: Sendable {
        var changes: RecordTypesChanges
        var refusals: [String]
        var report: RecordTypeCatalog.IndexReport?
    }
}
