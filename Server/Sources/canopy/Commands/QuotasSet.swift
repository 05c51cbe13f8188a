import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy quotas set`: the default quota, or one user's.
struct QuotasSet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set the default storage quota (--default SIZE) or one user's (USER SIZE; SIZE 'default' puts them back on the default).",
        discussion: """
            SIZE: bytes (500000), with a unit (200MB, 1.5GiB: KB MB GB TB are powers of 1000, KiB MiB GiB TiB of 1024), \
            or unlimited. A lower quota refuses growth from then on; nothing stored is removed, and a user over it can \
            still delete and shrink. Examples: canopy quotas set --default 5GB; canopy quotas set alice 20GiB; \
            canopy quotas set alice default
            """
    )

    @Argument(help: "USER SIZE, or with --default just SIZE.")
    var arguments: [String]

    @Flag(name: .customLong("default"), help: "Set the default quota, for every user without one of their own.")
    var setDefault = false

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        if setDefault {
            guard arguments.count == 1 else { throw ValidationError("with --default, give only SIZE (for example: canopy quotas set --default 5GB)") }
            _ = try parsed(arguments[0])
        } else {
            guard arguments.count == 2 else { throw ValidationError("give USER and SIZE (for example: canopy quotas set alice 20GiB), or --default SIZE") }
            if arguments[1].lowercased() != "default" { _ = try parsed(arguments[1]) }
        }
    }

    private func parsed(_ text: String) throws -> Int64? {
        do { return try ByteSize.parse(text) } catch { throw ValidationError("\(error)") }
    }

    func run() async throws {
        let arguments = self.arguments, setDefault = self.setDefault
        let size = try parsed(setDefault ? arguments[0] : (arguments[1].lowercased() == "default" ? "0" : arguments[1]))
        let useDefault = !setDefault && arguments[1].lowercased() == "default"
        let said = try await withQuotaAdmin(database) { quotas, users, connection in
            if setDefault {
                try await quotas.setDefault(size, connection: connection)
                return "default quota: \(ByteSize.describe(size))"
            }
            let user = try await users.find(arguments[0], connection: connection)
            try await quotas.set(user, bytes: size, useDefault: useDefault, connection: connection)
            let usage = try await quotas.usage(of: user, connection: connection)
            let whose = useDefault ? "the default quota" : "their own quota"
            return "\(user.name) (\(user.userRecordName)): \(whose), \(ByteSize.describe(usage.quotaBytes)); \(ByteSize.describe(usage.usedBytes)) used"
        }
        print(said)
    }
}
