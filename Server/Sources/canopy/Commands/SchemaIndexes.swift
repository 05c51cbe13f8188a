import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy schema indexes`: every index a saved record pays for, what it
/// serves, its size, and how often anything read it.
struct SchemaIndexes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "indexes",
        abstract: "List the indexes on records: what each serves, its size, and the scans since statistics were reset.",
        discussion: """
            Every saved record updates every index, so an index nothing reads only slows writes \
            (docs/BENCHMARK_NOTES.md measures what each kind costs a batch of saves). Declared \
            indexes come from QUERYABLE, SORTABLE and SEARCHABLE in the schema: one with no scans \
            over a representative period is a candidate to remove from the schema file (canopy \
            schema apply then drops it; in production mode it refuses, as a production schema only \
            grows). Scans are PostgreSQL's counts (pg_stat_user_indexes) since its statistics were \
            last reset; a replica keeps its own. See docs/RECORD_SCHEMAS.md.
            """
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    @Flag(help: "Print JSON: {countingSince, indexes: [{name, origin, recordType, fieldName, kind, purpose, bytes, scans}]}.")
    var json = false

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.schema")
        let migrator = migrations.migrator(logger: logger)
        let report: IndexUsageReport
        do {
            report = try await withAdminConnection(database, logger: logger) { connection, _ in
                try await migrator.up(connection: connection) { _ in }
                return try await IndexUsageReport.read(connection: connection, logger: logger)
            }
        } catch {
            throw fail(error)
        }
        print(json ? Self.json(report) : Self.table(report), terminator: "")
    }

    static func serves(_ index: IndexUsage) -> String {
        switch index.origin {
        case .declared(let recordType, let fieldName, let kind):
            let declared = kind == "search" ? "SEARCHABLE fields" : kind == "list" ? "QUERYABLE list (CONTAINS)" : "QUERYABLE/SORTABLE"
            return "\(recordType).\(fieldName): \(declared)"
        case .base(let purpose):
            return "base: \(purpose)"
        }
    }

    static func size(_ bytes: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: bytes, countStyle: .binary)
    }

    static func table(_ report: IndexUsageReport) -> String {
        let rows = report.indexes.map { [$0.name, serves($0), size($0.bytes), $0.scans.formatted()] }
        let header = ["index", "serves", "size", "scans"]
        let widths = (0..<header.count).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                column >= 2 ? String(repeating: " ", count: widths[column] - cell.count) + cell
                    : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        var text = ([header] + rows).map(line).joined(separator: "\n") + "\n"
        let since = report.countingSince.map { "since " + $0.formatted(.iso8601) } ?? "since the statistics began"
        text += "scans counted \(since) (pg_stat_user_indexes)\n"
        let unused = report.indexes.filter {
            if case .declared = $0.origin { return $0.scans == 0 }
            return false
        }
        if !unused.isEmpty {
            text += "declared but never scanned: \(unused.map { serves($0).components(separatedBy: ":")[0] }.joined(separator: ", ")); "
                + "every save of their record type still updates them\n"
        }
        return text
    }

    static func json(_ report: IndexUsageReport) -> String {
        let indexes: [[String: Any]] = report.indexes.map { index in
            var entry: [String: Any] = ["name": index.name, "bytes": index.bytes, "scans": index.scans]
            switch index.origin {
            case .declared(let recordType, let fieldName, let kind):
                entry["origin"] = "declared"
                entry["recordType"] = recordType
                entry["fieldName"] = fieldName
                entry["kind"] = kind
            case .base(let purpose):
                entry["origin"] = "base"
                entry["purpose"] = purpose
            }
            return entry
        }
        var object: [String: Any] = ["indexes": indexes]
        object["countingSince"] = report.countingSince.map { $0.formatted(.iso8601) } ?? NSNull()
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
