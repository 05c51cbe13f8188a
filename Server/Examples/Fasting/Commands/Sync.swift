import ArgumentParser
import CanopyKit
import Foundation

/// `fasting sync [--watch]`: fetches and sends; with --watch keeps doing so
/// as the server announces changes, printing each one.
struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Fetch and send changes; with --watch, keep watching and print changes as they arrive.")

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Keep running (Ctrl-C to stop), printing changes from others as they arrive.")
    var watch = false

    @Option(help: "With --watch: stop after this many seconds (for scripts and tests).")
    var seconds: Double?

    func run() async throws {
        do {
            try await connection.withLog { log in
                if watch {
                    await log.setAnnounce { line in say(line) }
                    await log.start(automatic: true)
                }
                try await log.sync()
                let count = await log.fasts.count
                print("in step: \(count) fasts")
                guard watch else { return }
                say("watching for changes (Ctrl-C to stop)")
                let stop = seconds.map { Date().addingTimeInterval($0) } ?? .distantFuture
                while Date() < stop {
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
        } catch {
            throw fail(error)
        }
    }
}

/// One line to standard output, written at once (a watcher's output is read while it runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

extension FastingLog {
    func setAnnounce(_ announce: @escaping @Sendable (String) -> Void) {
        self.announce = announce
    }
}
