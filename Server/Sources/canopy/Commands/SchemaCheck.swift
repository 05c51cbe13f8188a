import ArgumentParser
import CanopyPlanner

/// `canopy schema check FILE`: parse and check a schema file, touching no database.
struct SchemaCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a schema file (no database needed); prints file:line:column for each fault."
    )

    @Argument(help: ArgumentHelp("The schema file, or - for standard input.", valueName: "file"))
    var file: String

    func run() async throws {
        let document = try RecordTypesFile.read(file)
        let fields = document.recordTypes.reduce(0) { $0 + $1.fields.count }
        let indexes = RecordTypeIndex.indexes(for: document).count
        print("\(file): \(document.recordTypes.count) record types, \(fields) fields, \(indexes) indexes: ok")
    }
}
