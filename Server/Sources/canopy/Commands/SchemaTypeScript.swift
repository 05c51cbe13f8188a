import ArgumentParser
import CanopyPlanner
import Foundation

/// `canopy schema typescript FILE`: TypeScript declarations of a schema's
/// record types for CanopyJS, so a web app reads typed fields.
struct SchemaTypeScript: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "typescript",
        abstract: "Write TypeScript declarations of a schema file's record types for CanopyJS (no database needed).",
        discussion: """
            Each record type becomes an interface of its fields (optional, typed as CanopyJS reads \
            them: STRING string, INT64 number | bigint, DOUBLE number, BOOLEAN boolean, TIMESTAMP \
            Date, REFERENCE Reference, LOCATION Location, BYTES Uint8Array, ASSET Asset, LIST<T> \
            arrays) and a record type alias, and is added to CanopyJS's RecordTypes, so that \
            query(zone, {recordType: "Item"}) answers typed records and isRecordType(record, "Item") \
            narrows one. For the database's schema: canopy schema export | canopy schema typescript -. \
            See docs/TYPESCRIPT.md.
            """
    )

    @Argument(help: ArgumentHelp("The schema file, or - for standard input.", valueName: "file"))
    var file: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the declarations to this file (a .d.ts) instead of standard output; replaced whole, never half-written.", valueName: "path"))
    var output: String?

    @Option(name: .customLong("module"), help: ArgumentHelp("The module name the app imports CanopyJS by.", valueName: "specifier"))
    var module = "@canopy/client"

    func validate() throws {
        if module.isEmpty { throw ValidationError("--module needs a module specifier, such as @canopy/client") }
        if let output, output.isEmpty { throw ValidationError("--output needs a path") }
    }

    func run() async throws {
        let document = try RecordTypesFile.read(file)
        let source = file == "-" ? "a schema read from standard input" : (file as NSString).lastPathComponent
        let text = RecordTypesTypeScript.declarations(document, module: module, source: source)
        guard let output else {
            print(text, terminator: "")
            return
        }
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw ValidationError("cannot write \(output): \(error.localizedDescription)")
        }
        let count = document.recordTypes.count
        FileHandle.standardError.write(Data("\(output): \(count) record type\(count == 1 ? "" : "s")\n".utf8))
    }
}
