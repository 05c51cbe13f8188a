import Foundation
import PackagePlugin

/// Compiles `Server/schema/canopy.graphql` into the CanopyPlanner module at build
/// time, so the file is the only source of the SDL the gateway serves and
/// the binary needs no file to find at run time.
@main
struct EmbedSDL: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "schema/canopy.graphql")
        let output = context.pluginWorkDirectoryURL.appending(path: "GraphQLAPISource.swift")
        return [
            .buildCommand(
                displayName: "Embedding Server/schema/canopy.graphql",
                executable: try context.tool(named: "EmbedText").url,
                arguments: [input.path(), output.path()],
                inputFiles: [input],
                outputFiles: [output]
            ),
        ]
    }
}
