import ArgumentParser
import Foundation

/// `--asset-dir`, shared by `canopy serve` (where uploads go) and `canopy
/// assets collect` (what it cleans), so both find the same directory.
struct AssetDirectoryOptions: ParsableArguments {
    @Option(name: .customLong("asset-dir"), help: ArgumentHelp(
        "Where uploaded assets' bytes are kept, content-addressed (env CANOPY_ASSET_DIR; default: assets in the data directory). Back it up with the database; see docs/ASSETS.md.",
        valueName: "dir"))
    var assetDirectory: String?

    /// The flag, else CANOPY_ASSET_DIR, else `assets` in the data directory.
    func directory(_ database: DatabaseOptions) -> String {
        assetDirectory ?? ProcessInfo.processInfo.environment["CANOPY_ASSET_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? URL(fileURLWithPath: database.setup.dataDirectory).appendingPathComponent("assets").path
    }
}
