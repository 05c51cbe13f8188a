import ArgumentParser

/// `canopy assets`: the bytes of uploaded assets.
struct Assets: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Look after the asset directory (uploaded files).",
        discussion: "See docs/ASSETS.md for the upload flow, storage layout and backups.",
        subcommands: [AssetsCollect.self]
    )
}
