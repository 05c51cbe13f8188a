import Foundation

/// One parser of outside input, driven with bytes libFuzzer chose. A
/// target traps (`fatalError`) when a property it checks fails; a crash in
/// the code under test is found by the Swift runtime's own traps.
protocol FuzzTarget: Sendable {
    static var name: String { get }
    func run(_ bytes: UnsafeRawBufferPointer)
    /// Seeds made by code (signed tokens), by file name; the rest of a
    /// target's seeds are files under Server/Fuzz/Corpus/<name>/.
    func generatedSeeds() async throws -> [String: Data]
}

extension FuzzTarget {
    func generatedSeeds() async throws -> [String: Data] { [:] }
}

enum FuzzTargets {
    static let all: [any FuzzTarget] = [
        PredicateTarget(), RecordTypesTarget(), JSONTarget(), GraphQLTarget(),
        TokenTarget(), JWTTarget(), KeySetTarget(), AssetURLTarget(), OutboundURLTarget(), AnonymousAccessTarget(),
        WebServicesTarget(), ServerSignatureTarget(),
    ]

    static func named(_ name: String) -> (any FuzzTarget)? {
        all.first { type(of: $0).name == name }
    }

    static func writeSeeds(to directory: String) async throws {
        for target in all {
            let seeds = try await target.generatedSeeds()
            guard !seeds.isEmpty else { continue }
            let folder = "\(directory)/\(type(of: target).name)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (name, data) in seeds {
                try data.write(to: URL(fileURLWithPath: "\(folder)/\(name)"))
            }
            print("\(folder): \(seeds.count) seeds")
        }
    }
}

/// A property a target checks: on failure, the input is a crash for libFuzzer.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("property failed: \(message())") }
}

extension UnsafeRawBufferPointer {
    /// The bytes as text (invalid UTF-8 repaired, as the gateway's decoders do).
    var text: String { String(decoding: self, as: UTF8.self) }
}
