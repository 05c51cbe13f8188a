import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy shares activity --owner USER --zone ZONE [--root RECORD]`.
struct SharesActivity: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity",
        abstract: "Print the activity log of a user's shares of one zone, oldest first.",
        discussion: """
            Includes shares deleted (with their zone or root) within the retention period \
            (canopy serve --share-activity-retention-days, default 90), which apps can no longer read.
            """
    )

    @Option(help: "The zone's owner (name or userRecordName).")
    var owner: String

    @Option(help: "The zone's name.")
    var zone: String

    @Option(help: "Only the hierarchy share rooted at this recordName.")
    var root: String?

    @Option(help: "Only entries after this entry id (the first column of an earlier run).")
    var after: Int64 = 0

    @Option(help: "At most this many entries.")
    var limit: Int = 1000

    @Flag(help: "Print the entries as a JSON array on stdout.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let entries = try await withAdministration(database, category: "canopy.shares", ShareActivityAdmin.init(logger:)) { admin, connection in
            try await admin.activity(owner: owner, zone: zone, root: root, after: after, limit: limit, connection: connection)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(entries), as: UTF8.self))
            return
        }
        if entries.isEmpty {
            print("no activity logged for \(zone)\(root.map { " (root \($0))" } ?? "")")
            return
        }
        for entry in entries {
            let share = entry.root.map { "\(entry.zone)/\($0)" } ?? entry.zone
            let detail = entry.detail == "{}" ? "" : "  \(entry.detail)"
            print("\(entry.id)  \(entry.at.formatted(.iso8601))  \(share)  \(entry.event)  by \(entry.actor ?? "the server")  \(entry.subject ?? "-")\(detail)")
        }
    }
}
