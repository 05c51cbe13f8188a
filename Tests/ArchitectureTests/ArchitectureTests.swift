import Foundation
import Testing

/// docs/ARCHITECTURE.md matches the tree, and request-time code stays apart
/// from operator code (issue 34). Reads the sources as text: no module of
/// the package is linked here, so this target builds in seconds.
@Suite("docs/ARCHITECTURE.md and the module graph")
struct ArchitectureTests {
    static let root: URL = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The modules whose code runs while serving requests: none may import `CanopyAdmin`.
    static let requestTime = ["CanopyEncoding", "CanopyWAL", "CanopyPlanner", "CanopyRequestStore", "CanopyIdentity", "CanopyAssets",
                              "CanopyPush", "CanopyGateway"]

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The module table: module name → the modules it depends on, as the page says.
    static func documentedModules() throws -> [String: Set<String>] {
        var modules: [String: Set<String>] = [:]
        for line in try text("docs/ARCHITECTURE.md").split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { continue }
            let name = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let dependencies = cells[2] == "—" ? [] : cells[2].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            }
            modules[name] = Set(dependencies)
        }
        return modules
    }

    /// The server's Package.swift (Server/, DECISIONS 127): its targets in Sources/, with their dependencies on targets of this package.
    static func packageModules(among names: Set<String>) throws -> [String: Set<String>] {
        let manifest = try text("Server/Package.swift")
        var modules: [String: Set<String>] = [:]
        // Each `.target(` or `.executableTarget(` block up to the next target.
        let blocks = manifest.components(separatedBy: "arget(").dropFirst()
        for block in blocks {
            guard let nameRange = block.range(of: #"name: "([^"]+)""#, options: .regularExpression) else { continue }
            let name = String(block[nameRange].dropFirst(7).dropLast())
            guard names.contains(name) else { continue }
            var dependencies: Set<String> = []
            if let start = block.range(of: "dependencies: ["), let end = block.range(of: "],", range: start.upperBound..<block.endIndex) {
                let list = block[start.upperBound..<end.lowerBound]
                for line in list.split(separator: "\n") {
                    let item = line.trimmingCharacters(in: .whitespaces)
                    // Only plain "Name" entries: `.product(...)` lines are third-party.
                    for part in item.split(separator: ",") {
                        let word = part.trimmingCharacters(in: .whitespaces)
                        if word.hasPrefix("\""), word.hasSuffix("\""), word.count > 2 { dependencies.insert(String(word.dropFirst().dropLast())) }
                    }
                }
            }
            modules[name] = dependencies
        }
        return modules
    }

    static func sourceModules() throws -> Set<String> {
        let names = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
        return Set(names.filter { !$0.hasPrefix(".") })
    }

    @Test("every module in Sources/ is in the table, and every module in the table is in Sources/")
    func tableListsEveryModule() throws {
        let documented = Set(try Self.documentedModules().keys)
        let actual = try Self.sourceModules()
        #expect(documented == actual, "not in docs/ARCHITECTURE.md: \(actual.subtracting(documented).sorted()); no such module: \(documented.subtracting(actual).sorted())")
    }

    @Test("each module's dependencies in Package.swift are the table's")
    func dependenciesMatch() throws {
        let documented = try Self.documentedModules()
        let package = try Self.packageModules(among: try Self.sourceModules())
        #expect(package.count == documented.count, "\(package.keys.sorted())")
        for (name, dependencies) in documented {
            #expect(package[name] == dependencies, "\(name): Package.swift has \(package[name]?.sorted() ?? []), the page \(dependencies.sorted())")
        }
    }

    @Test("every file and folder the page names exists")
    func namedFilesExist() throws {
        let page = try Self.text("docs/ARCHITECTURE.md")
        let regex = try NSRegularExpression(pattern: #"`((?:Sources|Tests|sql|migrations|schema)/[^`\s]*)`"#)
        let matches = regex.matches(in: page, range: NSRange(page.startIndex..., in: page))
        #expect(matches.count > 20)
        for match in matches {
            let path = (page as NSString).substring(with: match.range(at: 1)).replacingOccurrences(of: "NNNN_name.sql", with: "")
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path), "docs/ARCHITECTURE.md names \(path), which does not exist")
        }
    }

    @Test("no request-time module depends on or imports CanopyAdmin")
    func requestTimeNeverImportsAdmin() throws {
        let package = try Self.packageModules(among: Set(Self.requestTime))
        for module in Self.requestTime {
            #expect(package[module]?.contains("CanopyAdmin") == false, "\(module) depends on CanopyAdmin in Package.swift")
            let directory = Self.root.appendingPathComponent("Sources/\(module)")
            let files = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
            #expect(!files.isEmpty, "\(module) has no sources")
            for file in files {
                let source = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                let imports = source.split(separator: "\n").filter { $0.range(of: #"^\s*(@\w+\s+)*import\s+(\w+\s+)?CanopyAdmin\b"#, options: .regularExpression) != nil }
                #expect(imports.isEmpty, "Sources/\(module)/\(file) imports CanopyAdmin: request-time code must not use operator code")
            }
        }
    }
}
