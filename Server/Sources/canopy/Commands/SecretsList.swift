import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy secrets list`: each key's name and dates, never its bytes.
struct SecretsList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the server's keys: name, when made, and until when a rotated key is accepted."
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let logger = database.logger("canopy.secrets")
        let keys: [SecretRotation.Summary]
        do {
            keys = try await withAdminConnection(database, logger: logger) { connection, _ in
                try await SecretRotation.list(connection: connection, logger: logger)
            }
        } catch {
            throw fail(error)
        }
        let now = Date()
        for key in keys {
            var line = "\(key.name)\tmade \(key.createdAt.formatted(.iso8601))"
            if let until = key.acceptedUntil {
                line += until > now ? "\taccepted until \(until.formatted(.iso8601))" : "\tno longer accepted (since \(until.formatted(.iso8601)))"
            }
            print(line)
        }
    }
}
