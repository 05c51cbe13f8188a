import CanopyEncoding
import CanopyRequestStore
import Crypto
import Foundation

/// One versioned file (`migrations/NNNN_name.sql`, the baseline or an
/// archived file): its name, text and checksum. Applied once, never edited.
public struct MigrationFile: Sendable, Equatable {
    public let name: String
    public let version: Int
    public let text: String
    /// Hex SHA-256 of the file's bytes; an applied file must never change.
    public let checksum: String

    public init(name: String, text: String) throws {
        guard let version = Self.version(of: name) else {
            throw StoreError(.invalidInput, "migration file '\(name)' is not named NNNN_name.sql")
        }
        self.name = name
        self.version = version
        self.text = text
        self.checksum = Hex.encode(SHA256.hash(data: Data(text.utf8)))
    }

    static func version(of name: String) -> Int? {
        guard name.hasSuffix(".sql") else { return nil }
        let stem = name.dropLast(4)
        let parts = stem.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, parts[0].count == 4, let version = Int(parts[0]),
              parts[1].allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
        else { return nil }
        return version
    }

    /// Reads every migration in a directory (not its subdirectories), in
    /// order; an absent directory holds none unless `required`.
    public static func load(directory: String, required: Bool = true) throws -> [MigrationFile] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            if !required { return [] }
            throw StoreError(.invalidConfiguration, "migrations directory '\(directory)' does not exist (pass --migrations-dir or set CANOPY_MIGRATIONS_DIR)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }.sorted()
        var files: [MigrationFile] = []
        for name in names {
            let text = try String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)
            files.append(try MigrationFile(name: name, text: text))
        }
        var seen: [Int: String] = [:]
        for file in files {
            if let other = seen[file.version] {
                throw StoreError(.invalidInput, "migrations \(other) and \(file.name) have the same number")
            }
            seen[file.version] = file.name
        }
        return files
    }
}
