import CanopyPlanner

/// The schema language of `canopy schema apply` (docs/SCHEMA.md): a
/// document that parses prints as text that parses to a document that
/// prints the same (the printer is what `canopy schema export` writes).
struct RecordTypesTarget: FuzzTarget {
    static let name = "schema"

    func run(_ bytes: UnsafeRawBufferPointer) {
        guard let document = try? RecordTypesParser.parse(bytes.text) else { return }
        let printed = RecordTypesPrinter.print(document)
        let reparsed: RecordTypesDocument
        do {
            reparsed = try RecordTypesParser.parse(printed)
        } catch {
            fatalError("property failed: the printed schema does not parse (\(error)):\n\(printed)")
        }
        require(RecordTypesPrinter.print(reparsed) == printed, "printing is not stable:\n\(printed)")
    }
}
