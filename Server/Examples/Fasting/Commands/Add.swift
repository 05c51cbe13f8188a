import ArgumentParser
import CanopyKit
import Foundation

/// `fasting add`: logs a fast and sends it at once.
struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Log a fast (in your log, or with --shared in the one shared with you).")

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "How long the fast lasted, in whole hours (1-240).")
    var hours: Int

    @Option(help: "When it ended, as ISO 8601 (2026-11-24T08:00:00Z); default now.")
    var ended: String?

    @Option(help: "A note.")
    var note: String?

    @Option(name: .customLong("tag"), help: "A tag (repeat for several).")
    var tags: [String] = []

    @Flag(help: "Add to the log someone shared with you (READ_WRITE) instead of yours.")
    var shared = false

    @Option(help: "With --shared: whose log, by userRecordName, when several are shared with you.")
    var owner: String?

    func validate() throws {
        guard (1...240).contains(hours) else { throw ValidationError("--hours must be between 1 and 240, not \(hours)") }
        if let ended, ISO8601DateFormatter().date(from: ended) == nil {
            throw ValidationError("--ended must be an ISO 8601 date such as 2026-11-24T08:00:00Z, not \(ended)")
        }
    }

    func run() async throws {
        let endDate = ended.flatMap { ISO8601DateFormatter().date(from: $0) } ?? Date()
        do {
            let fast = try await connection.withLog { log in
                try await log.add(hours: hours, endDate: endDate, note: note, tags: tags, shared: shared, owner: owner)
            }
            print("added \(FastingLog.line(fast))")
        } catch {
            throw fail(error)
        }
    }
}
