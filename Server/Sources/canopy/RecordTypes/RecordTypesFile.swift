import ArgumentParser
import CanopyPlanner
import Foundation

/// A schema file named on the command line (`-` for standard input), read
/// and parsed; a fault is printed as `file:line:column: message`, the way
/// compilers print theirs, so editors can jump to it.
enum RecordTypesFile {
    static func read(_ path: String) throws -> RecordTypesDocument {
        let source: String
        if path == "-" {
            source = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("cannot read \(path)")
            }
            source = String(decoding: data, as: UTF8.self)
        }
        do {
            return try RecordTypesParser.parse(source)
        } catch let error as QueryError {
            let name = path == "-" ? "<stdin>" : path
            let place = error.locations.first.map { "\($0.line):\($0.column): " } ?? ""
            printError("\(name):\(place)error: \(error.message)")
            throw ExitCode.failure
        }
    }

    static func printError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
