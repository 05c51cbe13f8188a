import CanopyEncoding
import CanopyRequestStore
import Crypto
import Foundation

/// One file of the database's code under `sql/` (functions, triggers,
/// policies and the grants on them), written so that applying it again
/// replaces what it defines. `canopy migrate up` re-applies it whenever its
/// checksum differs from the one recorded in `canopy.schema_repeatables`.
public struct RepeatableFile: Sendable, Equatable {
    /// The path relative to the code directory, e.g. `policies/records.sql`.
    public let path: String
    public let text: String
    /// Hex SHA-256 of the file's text.
    public let checksum: String

    public init(path: String, text: String) {
        self.path = path
        self.text = text
        self.checksum = Hex.encode(SHA256.hash(data: Data(text.utf8)))
    }

    /// The manifest that states the order files are applied in.
    public static let manifestName = "manifest.txt"

    /// Reads the files `manifest.txt` lists, in its order. Refuses a `.sql`
    /// file the manifest does not list, a listed file that does not exist,
    /// and a path listed twice, naming each.
    public static func load(directory: String) throws -> [RepeatableFile] {
        let manifestPath = "\(directory)/\(manifestName)"
        guard let manifest = try? String(contentsOfFile: manifestPath, encoding: .utf8) else {
            throw StoreError(.invalidConfiguration, "the database's code directory '\(directory)' has no \(manifestName) (pass --sql-dir or set CANOPY_SQL_DIR)")
        }
        var listed: [String] = []
        for (number, raw) in manifest.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard line.hasSuffix(".sql"), !line.hasPrefix("/"), !line.split(separator: "/").contains("..") else {
                throw StoreError(.invalidInput, "\(manifestPath) line \(number + 1): '\(line)' is not a .sql path inside \(directory)")
            }
            guard !listed.contains(line) else {
                throw StoreError(.invalidInput, "\(manifestPath) line \(number + 1): \(line) is listed twice")
            }
            listed.append(line)
        }
        let present = Set(sqlFiles(under: directory))
        if let unlisted = present.subtracting(listed).sorted().first {
            throw StoreError(.invalidInput, "\(directory)/\(unlisted) is not listed in \(manifestPath); add it where it belongs in the order")
        }
        return try listed.map { path in
            guard present.contains(path) else {
                throw StoreError(.invalidInput, "\(manifestPath) lists \(path), which does not exist")
            }
            return RepeatableFile(path: path, text: try String(contentsOfFile: "\(directory)/\(path)", encoding: .utf8))
        }
    }

    /// Every `.sql` file below `directory`, relative to it.
    static func sqlFiles(under directory: String) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory) else { return [] }
        var paths: [String] = []
        while let path = enumerator.nextObject() as? String {
            if path.hasSuffix(".sql") { paths.append(path) }
        }
        return paths
    }
}
