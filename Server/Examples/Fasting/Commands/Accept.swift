import ArgumentParser
import CanopyKit
import Foundation

/// `fasting accept URL`: joins a log someone shared, then fetches it.
struct Accept: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Accept a shared log by its URL, then fetch it.")

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The share URL you were sent (…/share/…).")
    var url: String

    func validate() throws {
        guard let parsed = URL(string: url), parsed.scheme != nil, parsed.path.contains("/share/") else {
            throw ValidationError("\(url) is not a share URL (it looks like https://host/share/…)")
        }
    }

    func run() async throws {
        do {
            let (metadata, count) = try await connection.withLog { log in
                let metadata = try await log.container.shareMetadata(for: URL(string: url)!)
                try await log.container.accept(metadata)
                try await log.sync()
                return (metadata, await log.fasts.filter { $0.shared && $0.ownerName == metadata.ownerName }.count)
            }
            let owner = metadata.ownerDisplayName ?? metadata.ownerName
            print("joined \(owner)'s \"\(metadata.title ?? "log")\" (\(metadata.participantPermission == .readWrite ? "read and write" : "read only")): \(count) fasts")
        } catch {
            throw fail(error)
        }
    }
}
