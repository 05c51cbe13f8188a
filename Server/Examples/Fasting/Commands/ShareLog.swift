import ArgumentParser
import CanopyKit
import Foundation

/// `fasting share`: invites someone to your log and prints the link to send them.
struct ShareLog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share", abstract: "Share your log with someone by email; prints the URL they accept.")

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "Who to invite (they accept with the URL, signed in with that address).")
    var email: String

    @Flag(help: "Let them only read (default: they may add and change fasts).")
    var readOnly = false

    @Option(help: "The share's title.")
    var title: String = "Fasting log"

    func validate() throws {
        guard email.contains("@"), !email.hasPrefix("@"), !email.hasSuffix("@") else {
            throw ValidationError("--email must be an email address, not \(email)")
        }
    }

    func run() async throws {
        do {
            let url = try await connection.withLog { log -> URL? in
                try await log.ensureZone()
                try await log.sendPrivate()
                let database = log.container.privateCloudDatabase
                let zoneID = RecordZone.ID(zoneName: FastingLog.zoneName)
                var share = try await database.share(forZoneID: zoneID) ?? Share(recordZoneID: zoneID)
                share.title = title
                share.addParticipant(Share.Participant(email: email, permission: readOnly ? .readOnly : .readWrite))
                return try await database.save(share).url
            }
            print("shared with \(email) (\(readOnly ? "read only" : "read and write")); send them this link:")
            print(url?.absoluteString ?? "(no URL)")
        } catch {
            throw fail(error)
        }
    }
}
