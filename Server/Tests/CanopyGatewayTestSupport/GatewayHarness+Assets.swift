import CanopyAssets
import CanopyGateway
import Foundation

extension GatewayHarness {
    /// A fresh harness and a gateway configuration storing assets in a new
    /// temporary directory (the caller removes it), for the asset suites.
    static func withAssets(
        lifetime: TimeInterval = 3600, maximumSize: Int64 = AssetSettings.defaultMaximumSize
    ) async throws -> (GatewayHarness, GatewayConfiguration, URL) {
        let harness = try await GatewayHarness.make()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-assets-\(UUID().uuidString)")
        let store = try await FileAssetStore(directory: directory.path)
        let settings = AssetSettings(store: store, maximumSize: maximumSize, downloadLifetime: lifetime)
        return (harness, GatewayConfiguration(assets: settings), directory)
    }
}
