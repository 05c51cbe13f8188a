import Foundation

// Writes `Server/schema/canopy.graphql` (argument 1) as the Swift source of
// `GraphQLAPISource` (argument 2): a raw string literal, with as many `#`
// as it takes that the text cannot end it. Run by the EmbedSDL plugin.

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: EmbedText INPUT OUTPUT\n".utf8))
    exit(2)
}
let text: String
do {
    text = try String(contentsOfFile: arguments[1], encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("EmbedText: cannot read \(arguments[1]): \(error)\n".utf8))
    exit(1)
}
var hashes = "#"
while text.contains("\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
// The newline before a closing delimiter is not part of the string: add one.
let source = "// Generated at build time from Server/schema/canopy.graphql by the EmbedSDL plugin. Do not edit.\n\n"
    + "/// The GraphQL schema Canopy serves: `Server/schema/canopy.graphql`, compiled in.\n"
    + "public enum GraphQLAPISource {\n"
    + "    public static let sdl = \(hashes)\"\"\"\n"
    + text + "\n"
    + "\"\"\"\(hashes)\n"
    + "}\n"
do {
    try source.write(toFile: arguments[2], atomically: true, encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("EmbedText: cannot write \(arguments[2]): \(error)\n".utf8))
    exit(1)
}
