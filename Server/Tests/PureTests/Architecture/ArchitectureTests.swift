import CanopyTestSupport
import Foundation
import Testing

/// docs/ARCHITECTURE.md matches the tree, and request-time code stays apart
/// from operator code (issues 34 and 65). The page's module table is the
/// one list: which modules exist, what each depends on, and which run while
/// serving requests; this reads it and the sources as text.
@Suite("docs/ARCHITECTURE.md and the module graph")
struct ArchitectureTests {
    static let root: URL = Repository.rootURL

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// One row of the page's module table.
    struct Row {
        var dependencies: Set<String>
        /// Its code runs while serving requests ("yes" in the last column).
        var requestTime: Bool
    }

    /// The module table: module name → its row, as the page says
    /// (`| \`Name\` | its job | depends on | request time |`).
    static func documentedModules() throws -> [String: Row] {
        var modules: [String: Row] = [:]
        for line in try text("docs/ARCHITECTURE.md").split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else {
                Issue.record("a module row of docs/ARCHITECTURE.md has fewer than four cells: \(line)")
                continue
            }
            let name = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let dependencies = cells[2] == "—" ? [] : cells[2].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            }
            #expect(["yes", "no"].contains(cells[3]), "\(name)'s request-time cell is \(cells[3]), not yes or no")
            modules[name] = Row(dependencies: Set(dependencies), requestTime: cells[3] == "yes")
        }
        return modules
    }

    /// The modules whose code runs while serving requests, as the table says:
    /// none may import `CanopyAdmin`.
    static func requestTimeModules() throws -> [String] {
        try documentedModules().filter(\.value.requestTime).map(\.key).sorted()
    }

    /// The server's Package.swift (Server/, DECISIONS 127): its targets in Server/Sources/, with their dependencies on targets of this package.
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
        let names = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Server/Sources").path)
        return Set(names.filter { !$0.hasPrefix(".") })
    }

    @Test("every module in Server/Sources/ is in the table, and every module in the table is in Server/Sources/")
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
        for (name, row) in documented {
            let dependencies = row.dependencies
            #expect(package[name] == dependencies, "\(name): Package.swift has \(package[name]?.sorted() ?? []), the page \(dependencies.sorted())")
        }
    }

    @Test("every file and folder the page names exists")
    func namedFilesExist() throws {
        let page = try Self.text("docs/ARCHITECTURE.md")
        let regex = try NSRegularExpression(pattern: #"`((?:Server/Sources|Server/Tests|Server/schema|Server/Fuzz|Server/Benchmarks|Server/Examples|sql|migrations|web|scripts|clients|docs)/[^`\s]*)`"#)
        let matches = regex.matches(in: page, range: NSRange(page.startIndex..., in: page))
        #expect(matches.count > 20)
        for match in matches {
            let path = (page as NSString).substring(with: match.range(at: 1)).replacingOccurrences(of: "NNNN_name.sql", with: "")
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path), "docs/ARCHITECTURE.md names \(path), which does not exist")
        }
    }

    @Test("no request-time module depends on or imports CanopyAdmin")
    func requestTimeNeverImportsAdmin() throws {
        let requestTime = try Self.requestTimeModules()
        let package = try Self.packageModules(among: Set(requestTime))
        for module in requestTime {
            #expect(package[module]?.contains("CanopyAdmin") == false, "\(module) depends on CanopyAdmin in Package.swift")
            let directory = Self.root.appendingPathComponent("Server/Sources/\(module)")
            let files = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
            #expect(!files.isEmpty, "\(module) has no sources")
            for file in files {
                let source = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                let imports = source.split(separator: "\n").filter { $0.range(of: #"^\s*(@\w+\s+)*import\s+(\w+\s+)?CanopyAdmin\b"#, options: .regularExpression) != nil }
                #expect(imports.isEmpty, "Server/Sources/\(module)/\(file) imports CanopyAdmin: request-time code must not use operator code")
            }
        }
    }

    @Test("the table's request-time modules are the gateway and everything it depends on in Package.swift")
    func requestTimeIsTheGatewaysClosure() throws {
        let package = try Self.packageModules(among: try Self.sourceModules())
        var serving: Set<String> = ["CanopyGateway"], next = ["CanopyGateway"]
        while let module = next.popLast() {
            for dependency in package[module] ?? [] where serving.insert(dependency).inserted { next.append(dependency) }
        }
        let documented = Set(try Self.requestTimeModules())
        #expect(documented == serving, "marked request time in docs/ARCHITECTURE.md but not used by the gateway: \(documented.subtracting(serving).sorted()); used by the gateway but not marked: \(serving.subtracting(documented).sorted())")
    }
}
