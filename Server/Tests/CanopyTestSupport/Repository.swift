import Foundation

/// Where the repository's folders are, for tests that read its files
/// (migrations, `sql/`, `Server/schema/`, the Python clients): found from
/// this file's path, whichever tier's target asks.
public enum Repository {
    /// The repository's root: the nearest folder above this file that holds
    /// both `migrations/` and `Server/`.
    public static let root: String = {
        var folder = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
        while folder.path != "/" {
            let migrations = folder.appendingPathComponent("migrations").path
            let server = folder.appendingPathComponent("Server").path
            if FileManager.default.fileExists(atPath: migrations), FileManager.default.fileExists(atPath: server) {
                return folder.path
            }
            folder.deleteLastPathComponent()
        }
        fatalError("no folder above \(#filePath) holds migrations/ and Server/")
    }()

    /// The root as a URL.
    public static var rootURL: URL { URL(fileURLWithPath: root, isDirectory: true) }

    /// The server's package folder (`Server/`).
    public static var server: String { "\(root)/Server" }
}
