import ArgumentParser
import CanopyAdmin
import Foundation

/// `canopy quotas show [USER]`: the default and the largest users, or one user.
struct QuotasShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show the default quota and the users who store the most, or one user's storage.",
        discussion: "Examples: canopy quotas show; canopy quotas show alice --json"
    )

    @Argument(help: "A user's name or userRecordName; without it, the default and the largest users.")
    var user: String?

    @Option(help: "How many users to list without USER.")
    var limit = 20

    @Flag(help: "Print JSON: {default, users: [{userRecordName, name, recordCount, fieldBytes, assetBytes, pendingUploadBytes, usedBytes, quotaBytes, ownQuota}]} (quotaBytes null: no limit).")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let user = self.user, limit = self.limit
        let (defaultQuota, usages) = try await withQuotaAdmin(database) { quotas, users, connection in
            let defaultQuota = try await quotas.defaultQuota(connection: connection)
            if let user {
                let found = try await users.find(user, connection: connection)
                return (defaultQuota, [try await quotas.usage(of: found, connection: connection)])
            }
            return (defaultQuota, try await quotas.largest(limit: limit, connection: connection))
        }
        if json {
            let rows: [[String: Any]] = usages.map { usage in
                [
                    "userRecordName": usage.userRecordName, "name": usage.name, "recordCount": usage.recordCount,
                    "fieldBytes": usage.fieldBytes, "assetBytes": usage.assetBytes, "pendingUploadBytes": usage.pendingUploadBytes,
                    "usedBytes": usage.usedBytes, "quotaBytes": usage.quotaBytes.map { $0 as Any } ?? NSNull(), "ownQuota": usage.ownQuota,
                ]
            }
            let object: [String: Any] = ["default": defaultQuota.map { $0 as Any } ?? NSNull(), "users": rows]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("default quota: \(ByteSize.describe(defaultQuota))")
        for usage in usages {
            var line = "\(usage.name) (\(usage.userRecordName)): \(ByteSize.describe(usage.usedBytes)) used of \(ByteSize.describe(usage.quotaBytes))"
            if let quota = usage.quotaBytes, quota > 0 {
                line += String(format: ", %.1f%%", Double(usage.usedBytes) * 100 / Double(quota))
            }
            line += usage.ownQuota ? " (own quota)" : " (default quota)"
            line += "; \(usage.recordCount) records: fields \(usage.fieldBytes), assets \(usage.assetBytes), pending uploads \(usage.pendingUploadBytes) bytes"
            print(line)
        }
    }
}
