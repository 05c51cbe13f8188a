import ArgumentParser
import CanopyPlanner
import Foundation

extension RecordTypesMode: ExpressibleByArgument {}

/// Development or production, for the commands whose rules differ: `serve`
/// (what a save may declare, what a query may use) and `schema apply`
/// (whether the schema may shrink). One environment variable sets both.
struct ModeOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "development: unknown record types and fields are created at first save. production: saves and queries must fit the applied schema, and schema changes are additive only (env CANOPY_MODE).",
        valueName: "mode"
    ))
    var mode: RecordTypesMode = RecordTypesMode(rawValue: ProcessInfo.processInfo.environment["CANOPY_MODE"] ?? "") ?? .development
}
