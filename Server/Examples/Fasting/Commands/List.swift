import ArgumentParser
import CanopyKit
import Foundation

/// `fasting list`: syncs, then prints every fast you can see.
struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sync, then list your fasts and those in logs shared with you.")

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "List the local copy without asking the server.")
    var offline = false

    func run() async throws {
        do {
            let fasts = try await connection.withLog { log in
                if !offline { try await log.sync() }
                return await log.fasts
            }
            if fasts.isEmpty { print("no fasts yet (fasting add --hours 16)") }
            for fast in fasts { print(FastingLog.line(fast)) }
        } catch {
            throw fail(error)
        }
    }
}
