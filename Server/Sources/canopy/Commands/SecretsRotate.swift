import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy secrets rotate NAME`: a new key signs from now on; what the old
/// one signed stays accepted for the overlap window, then is refused.
struct SecretsRotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Replace a signing key, keeping the old one accepted for an overlap window.",
        discussion: """
            NAME is cursor (records page cursors), change-token (change tokens; past the window they are \
            CHANGE_TOKEN_EXPIRED, so clients fetch again from the start), asset-url (download URLs) or vapid \
            (Web Push: a browser's subscription is bound to the key it subscribed with, so devices registered \
            before are pushed with the old key until the window ends, then dropped; pages that find \
            pushConfiguration's key changed must subscribe again and register). Every gateway signs with the \
            new key within 30 seconds.
            """
    )

    @Argument(help: "The key: cursor, change-token, asset-url or vapid.")
    var name: String

    @Option(name: .customLong("overlap"), help: ArgumentHelp(
        "How long what the old key signed stays accepted, in seconds, or with a unit: 90s, 30m, 24h, 7d (default 24h, at least 60s).",
        valueName: "duration"))
    var overlap: String = "24h"

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        guard let seconds = Self.seconds(overlap) else {
            throw ValidationError("--overlap '\(overlap)' is not a duration: write seconds, or a number with s, m, h or d (90s, 30m, 24h, 7d)")
        }
        guard seconds >= 60 else {
            throw ValidationError("--overlap must be at least 60s: gateways read the keys again every 30 seconds")
        }
    }

    /// Seconds in `90`, `90s`, `30m`, `24h`, `7d`.
    static func seconds(_ text: String) -> Int? {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let value = Int(text), value >= 0 { return value }
        guard let unit = text.last.flatMap({ units[$0] }), let value = Int(text.dropLast()), value >= 0 else { return nil }
        return value * unit
    }

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.secrets")
        let name = self.name, overlap = Duration.seconds(Self.seconds(self.overlap) ?? 86_400)
        let until: Date?
        do {
            until = try await withAdminConnection(database, logger: logger) { connection, _ in
                try await SecretRotation.rotate(name, overlap: overlap, connection: connection, logger: logger)
            }
        } catch {
            throw fail(error)
        }
        if let until {
            print("rotated \(name): new values are signed with the new key within 30 s; the old key is accepted until \(until.formatted(.iso8601))")
        } else {
            print("rotated \(name): it had no key yet (nothing was signed with it), so one was made")
        }
    }
}
