import Foundation

// canopy-fuzz: libFuzzer targets for every parser of outside input
// (issue 20, docs/FUZZING.md). Built only with CANOPY_FUZZ=1 (Package.swift).
//
//   canopy-fuzz TARGET [libFuzzer flags] [corpus directories or files]
//   canopy-fuzz seeds DIR     writes the generated seeds (signed tokens) under DIR/TARGET/
//   canopy-fuzz list          the targets, one a line

/// libFuzzer's entry when the program has its own `main` (SwiftPM makes one
/// for an executable target): runs the fuzzing loop with `callback`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The target this run drives; set once, before the loop starts.
nonisolated(unsafe) var selected: (any FuzzTarget)?

/// libFuzzer's callback, by the name its library expects.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selected?.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

var arguments = CommandLine.arguments
let usage = "usage: canopy-fuzz TARGET [libFuzzer flags] [corpus…] | seeds DIR | list\ntargets: \(FuzzTargets.all.map { type(of: $0).name }.joined(separator: ", "))\n"
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}
switch arguments[1] {
case "list":
    for target in FuzzTargets.all { print(type(of: target).name) }
    exit(0)
case "seeds":
    guard arguments.count == 3 else {
        FileHandle.standardError.write(Data(usage.utf8))
        exit(2)
    }
    do {
        try await FuzzTargets.writeSeeds(to: arguments[2])
    } catch {
        FileHandle.standardError.write(Data("canopy-fuzz: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
default:
    guard let target = FuzzTargets.named(arguments[1]) else {
        FileHandle.standardError.write(Data("canopy-fuzz: no target \(arguments[1])\n\(usage)".utf8))
        exit(2)
    }
    selected = target
}
arguments.remove(at: 1)
var argc = CInt(arguments.count)
var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
let status = cArguments.withUnsafeMutableBufferPointer { buffer in
    var argv = buffer.baseAddress
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzOne)
}
exit(status)
